#pragma once
// Per-step Chrome traces written while `record` runs, on torch.profiler's schedule and named as
// Composer's profiler names them (`record --trace-schedule`, `--trace-folder`, `--trace-filename`).
//
// The schedule counts each process's training steps (mode TRAIN, or GLOBAL for steps given no
// mode) from the start of the run, as torch.profiler counts prof.step(): skip_first steps, then
// cycles of wait, warmup and active steps, repeat cycles (0: forever). The active steps of a cycle
// are one window; when its last step ends, the window's Chrome trace (that process's sampled
// stacks, steps of every mode, GPU work: report::write_chrome_trace) is written as soon as the
// sample log holds it. sprof samples all the time, so warmup steps cost nothing; they are kept
// for the words' sake. A window still open when the process ends (or closes its hook) is written
// as it is, as torch.profiler's stop() does.
//
// The names are Python format strings over Composer's variables, plus {step}, {mode}, {pid}:
// ranks from the environment torchrun sets (read from /proc/PID/environ, so no code change);
// epochs from sprof.set_epoch(n) or, without it, from each new pass over a PyTorch DataLoader
// begun in training (or no) mode.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/launch.hpp"
#include "sprof/manifest.hpp"
#include "sprof/markers.hpp"
#include "sprof/modes.hpp"
#include "sprof/result.hpp"

namespace sprof::traces {

// torch.profiler.schedule's words; the defaults are Composer's cyclic_schedule's.
struct TraceSchedule {
  int64_t skip_first = 0;
  int64_t wait = 0;
  int64_t warmup = 1;
  int64_t active = 4;
  int64_t repeat = 1;  // cycles; 0: repeat forever
};

// "wait=1,warmup=1,active=3,repeat=2,skip_first=10"; any subset, in any order. Usage errors name
// the unknown word or the bad number.
Result<TraceSchedule> parse_trace_schedule(std::string_view text);

enum class ScheduleAction { none, warmup, record, record_and_save };
// What the schedule does at the step with this 0-based index (torch.profiler.schedule's function).
ScheduleAction schedule_action(const TraceSchedule& schedule, int64_t step_index);

// The values a trace's name can use.
struct TraceVariables {
  std::string run_name;
  int64_t rank = 0;
  int64_t local_rank = 0;
  int64_t world_size = 1;
  int64_t local_world_size = 1;
  int64_t node_rank = 0;
  int64_t epoch = 0;           // epochs begun before this one (Composer's timestamp.epoch)
  int64_t batch = 0;           // training steps finished when the window closed (Composer's timestamp.batch)
  int64_t batch_in_epoch = 0;  // of them, in this epoch
  int64_t step = 0;            // the window's last step, numbered as the profile numbers it
  std::string mode;            // that step's mode: "train", "eval", "predict", "global"
  int64_t pid = 0;
};

// The rank variables from an environment (torchrun's RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, and NODE_RANK or GROUP_RANK); missing or unparsable ones keep the defaults.
void ranks_from_environment(const std::map<std::string, std::string>& env, TraceVariables& vars);
// Those variables of a running process (its /proc/PID/environ); none when unreadable.
std::map<std::string, std::string> rank_environment(pid_t pid);

// A name template: Python's str.format syntax over TraceVariables' names ("{rank}", "{batch:06d}",
// "{{" and "}}" for braces).
class NameTemplate {
 public:
  // Usage errors name the template's flag (`what`) and the unknown variable or bad piece.
  static Result<NameTemplate> parse(std::string_view text, std::string_view what);
  std::string expand(const TraceVariables& vars) const;
  const std::string& text() const { return text_; }

 private:
  struct Piece {
    std::string literal;  // when variable is empty
    std::string variable;
    std::string spec;     // fmt's spec (Python's for these types)
  };
  std::string text_;
  std::vector<Piece> pieces_;
};

// A window whose trace is due.
struct TraceWindow {
  int32_t pid = 0;
  int64_t begin_ns = 0;  // the first active step's begin (CLOCK_MONOTONIC)
  int64_t end_ns = 0;    // the last active step's end
  bool complete = true;  // false: the process ended (or closed its hook) inside the window
  int64_t first_step = 0;
  TraceVariables vars;   // everything but run_name and the ranks
};

// Follows the markers of every process of a recording and says when a window closes.
class ScheduleTracker {
 public:
  explicit ScheduleTracker(TraceSchedule schedule) : schedule_(schedule) {}
  // Markers in the order one process wrote them; closed windows are appended to `out`.
  void add(const store::Marker& marker, std::vector<TraceWindow>& out);
  // The process ended at `end_ns`: an open window closes there (incomplete).
  void process_ended(int32_t pid, int64_t end_ns, std::vector<TraceWindow>& out);
  // Every process ended: open windows close at their last marker, or at `end_ns` when later.
  void finish(int64_t end_ns, std::vector<TraceWindow>& out);

 private:
  struct Open {
    int64_t begin_ns = 0;
    int64_t first_step = 0;
    int64_t last_step = 0;
    Mode mode = Mode::train;
    bool closing = false;  // its last active step has begun: the step's end closes it
  };
  struct Process {
    int64_t counted = 0;  // training steps begun
    int64_t epoch = 0;
    bool explicit_epoch = false;  // sprof.set_epoch was called: DataLoader passes no longer count
    int64_t loader_passes = 0;
    int64_t batch_in_epoch = 0;
    Mode mode = Mode::global;
    int64_t last_ns = 0;
    std::optional<Open> open;
  };
  void close(int32_t pid, Process& p, int64_t end_ns, bool complete, std::vector<TraceWindow>& out);

  TraceSchedule schedule_;
  std::map<int32_t, Process> processes_;
};

// The counter sprof.set_epoch(n) sends: domain "sprof", name "epoch".
inline constexpr std::string_view kEpochCounterDomain = "sprof";
inline constexpr std::string_view kEpochCounterName = "epoch";

struct TraceWindowsOptions {
  TraceSchedule schedule;
  std::string folder = "{run_name}/torch_traces";  // relative: under the profile directory
  std::string filename = "rank{rank}.{batch}.pt.trace.json";
  bool gzip = false;       // append ".gz" and compress
  int keep = -1;           // keep the newest N traces, delete older ones; -1: all
  bool overwrite = false;  // replace an existing file (else: leave it, say so, skip the window)
  std::string run_name;    // empty: the profile directory's name
};

// The record hook: tails markers/markers.log during housekeeping, writes each closed window's
// trace on a thread of its own once the sample log has been flushed past its end, and the rest in
// on_finish. Usage errors: a bad template (unknown variable, bad spec), keep < -1 or 0.
Result<std::unique_ptr<launch::RecordHooks>> make_trace_windows_hook(const TraceWindowsOptions& options);
// record --trace-schedule TEXT: the hook with TEXT parsed into options.schedule, or nothing (a
// null hook) when TEXT is empty; $RUN_NAME names the run when options leave run_name empty.
Result<std::unique_ptr<launch::RecordHooks>> trace_windows_hook(std::string_view schedule, TraceWindowsOptions options);

inline constexpr const char* kTraceWindowsSection = "trace_windows";

// One line for record's closing message from sprof.json's section ("3 step traces in DIR"), or ""
// when the recording had no schedule.
std::string trace_windows_summary(const store::Manifest& manifest, const std::filesystem::path& profile_dir);

}  // namespace sprof::traces
