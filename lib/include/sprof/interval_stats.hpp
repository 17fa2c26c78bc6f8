#pragma once
// Per-interval Python statistics built from the raw samples: smdebug's python-profiling stats
// directories for every interval of the step timeline (pre-step-zero, each step, the gaps
// between steps and modes, post-hook-close; one whole-life interval for a process without
// steps), and the same statistics for any selection of intervals at query time.
//
// Layout, per interval of a sampled process:
//   framework/<framework>/pyinstrument/<node_id>/<stats dir name>/python_stats       pstats
//                                                                 /python_stats.json  call tree
//                                                                 /python_stats.html  the tree
// <framework> is "pytorch" when the process imported torch, else "python". The profiler
// directory is smdebug's name for its *sampling* profiler (pyinstrument), because these numbers
// come from samples; cProfile's name is kept for exact, deterministic stats. smdebug's
// LocalPythonStatsReader names records by file name, so cProfileAnalysis pointed at
// framework/<framework>/pyinstrument reads python_stats, and PyinstrumentAnalysis reads the
// .json/.html pair.
//
// python_stats, from the samples a timer keeps (weights are each sample's measured interval):
//   tottime  seconds a function was the innermost Python frame
//   cumtime  seconds a function was anywhere on the stack, once per sample (recursion as
//            cProfile: a function twice on one stack counts once)
//   ncalls   calls observed: a frame that is new since the thread's previous sample (another
//            function at that depth, or its caller moved to another line) starts a call. Two
//            calls between two samples, or one call of a function repeated from the same line
//            in consecutive samples, look like one: a lower bound. Recursive calls (the function
//            already further up the stack) count in ncalls, not in the primitive calls.
//   callers  per caller: the same four numbers for the calls made from that caller
// Function labels are cProfile's (co_filename, co_firstlineno, co_name); the JSON tree keeps the
// qualified names the sampler read (co_qualname on 3.11+).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/profile_samples.hpp"
#include "sprof/pstats.hpp"
#include "sprof/result.hpp"
#include "sprof/sample_log.hpp"
#include "sprof/stats_dir.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::intervals {

inline constexpr const char* kSampledProfilerDir = "pyinstrument";
inline constexpr const char* kManifestSection = "interval_stats";  // record's sprof.json section

// smdebug's cProfile timers, as a choice of samples: every sample (wall time), on-CPU samples
// only, or idle ones only (off-CPU: sleeping, waiting on I/O or a lock).
enum class PythonTimer { total_time, cpu_time, off_cpu_time };
std::string_view to_string(PythonTimer timer);  // "total_time" | "cpu_time" | "off_cpu_time"
std::optional<PythonTimer> parse_python_timer(std::string_view text);

inline bool timer_keeps(PythonTimer timer, const store::SampleRecord& sample) {
  switch (timer) {
    case PythonTimer::total_time: return true;
    case PythonTimer::cpu_time: return !sample.idle();
    case PythonTimer::off_cpu_time: return sample.idle();
  }
  return true;
}

struct TimeSpan {
  int64_t begin_ns = 0;  // CLOCK_MONOTONIC; samples with begin_ns <= time_ns < end_ns
  int64_t end_ns = 0;
};

// One interval of one sampled process.
struct ProcessInterval {
  size_t process = 0;    // index into ProfileSamples::processes
  int32_t pid = 0;
  std::string node_id;
  std::string framework;          // "pytorch" | "python"
  timeline::Interval interval;   // the timeline's (or the whole-life one of a process without markers)
  std::optional<size_t> timeline_index;  // its index in ProcessTimeline::intervals, if it has one
  store::StatsDirName name;       // times in epoch microseconds, from the manifest's clock pair
  std::string dir_name;           // format_stats_dir_name(name)
  // The sample times it owns: [start, end) less the paused ranges. A process's first interval
  // (phase start) also owns the samples before it, its last (phase end) those after it.
  std::vector<TimeSpan> spans;

  // framework/<framework>/pyinstrument/<node_id>/<dir_name>, relative to the profile directory.
  std::filesystem::path relative_dir() const;
};

// The intervals of every sampled process, in the order smdebug's readers sort stats (start
// time, then node id). Processes the timeline does not know get one whole-life interval.
// Errors (bad_input): the profile has no manifest (its clock pair dates the intervals).
Result<std::vector<ProcessInterval>> plan_intervals(const store::ProfileSamples& profile,
                                                    const timeline::StepTimeline& timeline);

// pyinstrument's frame tree: one node per distinct call path (functions merged by name, file
// and first line). Node 0 is a synthetic root above the threads' outermost frames.
struct CallTreeNode {
  uint32_t function = 0;  // index into the process's SampleLog::functions() (unused at node 0)
  double time_s = 0;      // samples through this node
  double self_s = 0;      // samples ending here
  std::vector<uint32_t> children;
};

struct IntervalStats {
  store::StatsTable table;          // just store::no_samples_function() when no sample was kept
  std::vector<CallTreeNode> tree;   // tree[0] is the root
  uint64_t samples = 0;             // kept samples with Python frames
  double seconds = 0;               // their summed weights
  double cpu_seconds = 0;           // on-CPU weights of all the interval's samples
  std::vector<double> thread_seconds;  // `seconds` by thread (index into SampleLog::threads())
};

IntervalStats build_interval_stats(const store::ProfileSamples& profile, const ProcessInterval& interval,
                                   PythonTimer timer);

// pyinstrument's JSONRenderer document ({"start_time", "duration", "sample_count", "program",
// "cpu_time", "root_frame": {function, file_path_short, file_path, line_no, time, children}})
// plus "timer"; root_frame is null when nothing was kept. And a small static HTML view of it.
std::string render_tree_json(const store::ProfileSamples& profile, const ProcessInterval& interval,
                             const IntervalStats& stats, PythonTimer timer);
std::string render_tree_html(const store::ProfileSamples& profile, const ProcessInterval& interval,
                             const IntervalStats& stats, PythonTimer timer);

// Above this many intervals without a kept sample, none of them gets a directory: a job of very
// many tiny steps would otherwise make a directory per step whatever the samples say.
inline constexpr size_t kDefaultMaxEmptyDirectories = 10000;

struct WriteOptions {
  PythonTimer timer = PythonTimer::total_time;
  // Which intervals get a directory (profiling windows plug in here); unset: every interval.
  std::function<bool(const ProcessInterval&)> include;
  std::string window = "every interval";  // what `include` selects, in words, for sprof.json
  size_t max_empty_directories = kDefaultMaxEmptyDirectories;  // SIZE_MAX: always write them
  // Called now and then with directories written and to write; false stops the writing there.
  std::function<bool(size_t done, size_t total)> progress;
};

struct WriteSummary {
  size_t intervals = 0;    // planned
  size_t directories = 0;  // written
  size_t excluded = 0;     // left out by WriteOptions::include
  size_t removed = 0;      // excluded ones whose directory an earlier run had written, now removed
  size_t without_samples = 0;  // intervals without a kept sample (python_stats holds store::no_samples_function())
  size_t empty_not_written = 0;  // of those, left without a directory (over max_empty_directories)
  size_t to_write = 0;     // directories this write meant to write
  bool interrupted = false;  // progress() said stop: `directories` of `to_write` were written
  uint64_t samples = 0;    // kept samples in the written intervals
  std::string text() const;  // one line for record's summary
};

// Writes the stats directories under `profile.dir`, replacing files of the same names.
Result<WriteSummary> write_interval_stats(const store::ProfileSamples& profile,
                                          const timeline::StepTimeline& timeline,
                                          const WriteOptions& options = {});

// Puts what a write did into sprof.json's interval_stats section (replacing an earlier one).
void set_manifest_section(store::Manifest& manifest, const WriteSummary& summary, const WriteOptions& options);

}  // namespace sprof::intervals
