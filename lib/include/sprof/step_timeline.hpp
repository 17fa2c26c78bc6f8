#pragma once
// The step timeline: markers turned into per-process steps and into the consecutive intervals
// that smdebug names its python stats directories after
// (<start_mode>-<start_step>-<start_phase>-<start_us>_<end_mode>-<end_step>-<end_phase>-<end_us>).
//
// Per process the intervals tile the time from the process's first marker to its end:
//   pre_step_zero   prestepzero-*-start       -> <mode>-<g>-stepstart      (first step)
//   step            <mode>-<g>-stepstart       -> <mode>-<g>-stepend        (forward_pass_end_ns inside)
//   between_steps   <mode>-<g>-stepend         -> <mode>-<g'>-stepstart     (same mode)
//   between_modes   <mode>-<g>-stepend         -> <mode'>-<g'>-stepstart    (mode changed)
//   post_hook_close <mode>-<g>-stepend         -> posthookclose-*-end       (after the last step)
// where <g> is the global step, as in smdebug's directory names (Step:ModeKeys.* trace events
// carry the mode's own step number: Step::step). A process without steps has one interval,
// prestepzero-*-start -> posthookclose-*-end, of kind pre_step_zero. Zero-length gaps are left
// out. smdebug itself labels its post-hook-close directory prestepzero-*-end -> posthookclose-*-end;
// starting it at the last step's end instead makes smdebug's fetch_profile_stats_by_job_phase
// file it under "finalization", as its documentation intends.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/manifest.hpp"
#include "sprof/markers.hpp"
#include "sprof/result.hpp"

namespace sprof::timeline {

// Said once where a profile has no steps (end of record, top of analyze), with the way to get them.
inline constexpr const char* kNoStepsHint =
    "no training steps found: for a non-PyTorch loop use --step-fn NAME or sprof.step()";

struct Boundary {
  Mode mode = Mode::prestepzero;
  std::optional<int64_t> step;  // global step; nullopt is smdebug's "*"
  Phase phase = Phase::start;
  int64_t t_ns = 0;             // CLOCK_MONOTONIC
};

enum class IntervalKind : uint8_t { pre_step_zero, step, between_steps, between_modes, post_hook_close };
const char* to_string(IntervalKind kind);

struct Interval {
  IntervalKind kind = IntervalKind::step;
  Boundary start;
  Boundary end;
  std::optional<int64_t> forward_pass_end_ns;  // kind == step only
};

struct Step {
  Mode mode = Mode::global;
  int64_t step = 0;         // the mode's step number (Step:ModeKeys.<MODE> args.step_num)
  int64_t global_step = 0;  // stats directory names
  int64_t begin_ns = 0;
  std::optional<int64_t> forward_pass_end_ns;
  int64_t end_ns = 0;
  int32_t tid = 0;          // thread that began the step
  bool ended_by_marker = true;  // false: cut at the next step, hook close or the end of the process
};

struct TimeRange {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

struct ModeChangeAt {
  int64_t t_ns = 0;
  Mode mode = Mode::global;
};

struct DataLoaderIterInit {  // lane DataLoaderIterInitialize, event "<iterator_class>.__init__"
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int32_t tid = 0;
  int64_t iterator = 0;
  std::string iterator_class;
  int32_t num_workers = 0;
  bool pin_memory = false;
};

struct DataLoaderWait {  // lane DataLoaderIter, event "<iterator_class>::GetNext"
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int32_t tid = 0;
  int64_t iterator = 0;
  std::string iterator_class;  // from the iterator's init marker, "" when it was not seen
  store::DataLoaderOutcome outcome = store::DataLoaderOutcome::ok;
};

struct DataLoaderWorker {  // lane DataLoaderWorker (args worker_id, pid)
  int64_t worker_id = 0;
  int32_t parent_pid = 0;
  int64_t begin_ns = 0;
  std::optional<int64_t> end_ns;  // nullopt: the worker never reported its end
};

struct CounterValue {
  int64_t t_ns = 0;
  int32_t tid = 0;
  std::string domain;
  std::string name;
  double value = 0;
};

struct InstantEvent {
  int64_t t_ns = 0;
  int32_t tid = 0;
  std::string domain;
  std::string name;
  store::InstantScope scope = store::InstantScope::process;
};

// A Task, Frame or Event the program timed (sprof.Task(...).start()/.stop()).
struct RangeEvent {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int32_t tid = 0;
  store::RangeKind kind = store::RangeKind::task;
  std::string domain;
  std::string name;
};

struct ProcessTimeline {
  int32_t pid = 0;
  int32_t parent_pid = 0;          // from hello; 0 when unknown
  std::string start_reason;        // "start", "fork", or "" without a hello
  std::string python_version;
  std::string executable;
  std::string framework;           // "pytorch" once torch was imported, else ""
  std::string framework_version;
  int64_t start_ns = 0;            // hello, else the first marker
  std::optional<int64_t> close_ns; // hook close (atexit or sprof.close())
  int64_t end_ns = 0;              // process exit when known, else the last marker
  std::vector<Step> steps;
  std::vector<Interval> intervals;
  std::vector<ModeChangeAt> mode_changes;
  std::vector<TimeRange> paused;   // pause()..resume(); an open pause runs to end_ns
  std::vector<DataLoaderIterInit> dataloader_inits;
  std::vector<DataLoaderWait> dataloader_waits;
  std::optional<DataLoaderWorker> dataloader_worker;  // this process is a DataLoader worker
  std::vector<CounterValue> counters;
  std::vector<InstantEvent> instants;
  std::vector<RangeEvent> ranges;  // by end time
  std::vector<store::ReportedError> errors;
  int64_t dropped_markers = 0;
  std::vector<std::string> problems;  // markers that did not fit (a step end without a begin, ...)
};

struct StepTimeline {
  std::vector<ProcessTimeline> processes;  // ordered by pid
  const ProcessTimeline* find(int32_t pid) const;
};

// Collects markers in any order (they are sorted per process by time, stable for equal times),
// plus what the recorder knows on its own, and builds the timeline.
class StepTimelineBuilder {
 public:
  void add(const store::Marker& marker);
  void add(std::span<const store::Marker> markers);
  // The time the recorder saw the process exit (CLOCK_MONOTONIC ns): the end of its last interval.
  void set_process_exit(int32_t pid, int64_t t_ns);
  StepTimeline build() const;

 private:
  std::vector<store::Marker> markers_;
  std::vector<std::pair<int32_t, int64_t>> exits_;
};

StepTimeline build_step_timeline(std::span<const store::Marker> markers);

// The step timeline of a recorded profile: parses <profile_dir>/markers/markers.log (and
// markers/step_fn.log, the steps `record --step-fn` inferred from the samples) and ends each
// process at its detach time from the manifest sprof.json (set_process_exit). A profile without
// markers gives an empty timeline, not an error; malformed lines are skipped (as the parser does).
// Errors: profile_dir is not a directory, or a marker file exists but cannot be read.
Result<StepTimeline> read_step_timeline(const std::filesystem::path& profile_dir,
                                        const store::ProfileFiles& files = store::local_files());

// read_step_timeline() with the manifest given (record has it before sprof.json is final);
// manifest nullptr: no process exits are known. `problems` gets the marker parser's complaints.
Result<StepTimeline> build_profile_timeline(const std::filesystem::path& profile_dir,
                                            const store::Manifest* manifest,
                                            std::vector<std::string>* problems = nullptr,
                                            const store::ProfileFiles& files = store::local_files());

}  // namespace sprof::timeline
