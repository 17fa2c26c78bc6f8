#pragma once
// Profiling windows: which steps get python stats directories, with the semantics of smdebug's
// FrameworkProfile / PythonProfilingConfig (smdebug/profiler/profiler_config.py ProfileRange,
// profiler_config_parser.py, python_profiler.py).
//
// A window is a step range (start step + number of steps) or a time range (start time in Unix
// epoch seconds + duration in seconds), never both. smdebug decides at every step boundary
// (step start, step end) whether to profile the interval that begins there:
//   step range      active iff start <= step < start + num; missing start: the first step checked,
//                   missing num: 1
//   time range      active iff start <= now < start + duration; missing start: the time of the
//                   first check
//   start time only active for exactly one step: the first step checked at or after the start
// The step is the global step, the one in stats directory names. Pre-step-zero (process start
// to the first step) and post-hook-close (the last step's end to the process end) are profiled
// whenever python profiling is on, whatever the window. Without a window every interval is
// profiled (sprof's default). A profilerconfig.json whose PythonProfilingConfig gives no range
// profiles only pre-step-zero and post-hook-close, as smdebug does.
//
// --profiler-config FILE reads smdebug's profilerconfig.json (as smdebug's
// smdebug/profiler/profiler_config_parser.py parses it): keys are case-insensitive,
// ProfilingParameters.PythonProfilingConfig is a string holding a Python dict literal (a JSON
// object is accepted too) with StartStep, NumSteps, StartTimeInSecSinceEpoch (or
// StartTimeInSecUnixEpoch), DurationInSeconds (or Duration), ProfilerName (cprofile|pyinstrument)
// and cProfileTimer (total_time|cpu_time|off_cpu_time|default).
// Where smdebug would log an error and silently disable python profiling (both range kinds,
// non-numeric fields, a bad profiler name or timer, an unparsable dict) sprof refuses the file
// with an error naming it and the key; values the SageMaker SDK rejects (negative start step,
// num steps or duration <= 0) are refused too.

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/result.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::window {

// How per-interval python stats are made: from sprof's samples, or by cProfile inside the target.
enum class PythonProfiler { sampling, cprofile };
const char* to_string(PythonProfiler profiler);  // "sampling", "cprofile"
std::optional<PythonProfiler> parse_python_profiler(std::string_view text);

// smdebug's cProfileTimer. `cycle` is smdebug's "default": total_time on step 9, cpu_time on
// step 10, off_cpu_time on step 11, total_time on every other interval.
enum class CprofileTimer { total_time, cpu_time, off_cpu_time, cycle };
const char* to_string(CprofileTimer timer);  // "total_time", "cpu_time", "off_cpu_time", "default"
std::optional<CprofileTimer> parse_cprofile_timer(std::string_view text);  // case-insensitive
// The timer of an interval starting at `start_step` (nullopt: pre-step-zero / post-hook-close).
CprofileTimer timer_for_interval(CprofileTimer timer, std::optional<int64_t> start_step);

struct ProfilingWindow {
  enum class Kind {
    all,         // no window: every interval
    steps,       // start_step / num_steps (either may be missing)
    time,        // start_time_s / duration_s (either may be missing)
    boundaries,  // no step is profiled: only pre-step-zero and post-hook-close
  };
  Kind kind = Kind::all;
  std::optional<int64_t> start_step;
  std::optional<int64_t> num_steps;
  std::optional<double> start_time_s;  // Unix epoch seconds
  std::optional<double> duration_s;

  // A window from command-line values; `source` names them in errors. Giving step and time
  // fields together is a usage error, as are start_step < 0, num_steps <= 0, duration <= 0 and
  // a start time that is not a finite number >= 0.
  static Result<ProfilingWindow> make(std::optional<int64_t> start_step, std::optional<int64_t> num_steps,
                                      std::optional<double> start_time_s, std::optional<double> duration_s,
                                      std::string_view source);
  std::string describe() const;  // "steps 2..4", "every interval", ...
  // One line a program can parse back: "all", "boundaries", "steps <start> <num>" or
  // "time <start> <duration>", "-" for a missing value, times as %.17g Unix seconds (the
  // bootstrap's SPROF_WINDOW, sprof.json's python_profiling.window.kind).
  std::string spec() const;
};

// What --profiler-config contributed.
struct PythonProfilingConfig {
  std::filesystem::path file;
  bool enabled = false;  // false: the file turns python profiling off (see disabled_reason)
  std::string disabled_reason;
  ProfilingWindow window;
  std::optional<PythonProfiler> profiler;  // ProfilerName: cprofile -> cprofile, pyinstrument -> sampling
  std::optional<CprofileTimer> timer;      // cProfileTimer (only with cprofile)
};

// Reads and validates a profilerconfig.json. Errors (ErrorKind::bad_input) name the file and key.
Result<PythonProfilingConfig> read_profiler_config(const std::filesystem::path& file);
// The same from text; `source` stands for the file in messages.
Result<PythonProfilingConfig> parse_profiler_config(std::string_view text, const std::filesystem::path& source);

// A window resolved against one process's steps: smdebug's lazily filled fields (a missing start
// step or start time, the end step of a start-time-only window) fixed from the first check.
// An interval starting at a step boundary (step g, Unix time t) is profiled iff
//   kind != boundaries and min_step <= g < end_step and begin_s <= t < end_s.
struct ResolvedWindow {
  bool any_step = true;  // false: Kind::boundaries, or a start time after every step boundary
  int64_t min_step = INT64_MIN;
  int64_t end_step = INT64_MAX;
  double begin_s = -std::numeric_limits<double>::infinity();
  double end_s = std::numeric_limits<double>::infinity();
  bool contains_step(int64_t global_step, double unix_s) const;
};

// realtime_minus_monotonic_ns converts the timeline's CLOCK_MONOTONIC times to Unix time
// (store::Manifest: clock_realtime_ns - clock_monotonic_ns).
ResolvedWindow resolve(const ProfilingWindow& window, const timeline::ProcessTimeline& process,
                       int64_t realtime_minus_monotonic_ns);

// Whether an interval of that process gets a stats directory: pre-step-zero and post-hook-close
// always, the others by the step and time at their start boundary.
bool contains(const ResolvedWindow& window, const timeline::Interval& interval, int64_t realtime_minus_monotonic_ns);

// The window resolved for every process of a timeline, as record and stats-dirs choose the
// intervals that get stats directories. A process the timeline does not know is inside.
class TimelineWindows {
 public:
  TimelineWindows(const ProfilingWindow& window, const timeline::StepTimeline& timeline,
                  int64_t realtime_minus_monotonic_ns);
  bool contains(int32_t pid, const timeline::Interval& interval) const;

 private:
  std::map<int32_t, ResolvedWindow> windows_;
  int64_t offset_ns_ = 0;
};

// The intervals of `process` inside the window, as flags parallel to process.intervals.
std::vector<bool> select_intervals(const ProfilingWindow& window, const timeline::ProcessTimeline& process,
                                   int64_t realtime_minus_monotonic_ns);

// smdebug's ProfileRange.can_start_profiling as an online check, for callers that see the
// boundaries one by one (the bootstrap's Python copy of this logic is tested against it).
class WindowTracker {
 public:
  explicit WindowTracker(ProfilingWindow window) : window_(window) {}
  bool active(int64_t global_step, double unix_s);

 private:
  ProfilingWindow window_;
  std::optional<int64_t> end_step_;
};

}  // namespace sprof::window
