#pragma once
// What `record` does about python stats, decided once from --profiler-config and the flags that
// win over it: on or off, which profiler (sampling or cProfile in the target), cProfile's timer
// and the profiling window. Kept in sprof.json's "python_profiling" section, which this header
// writes and reads, so that stats-dirs can rewrite the stats with the window record used.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sprof/manifest.hpp"
#include "sprof/profiling_window.hpp"
#include "sprof/result.hpp"

namespace sprof::window {

inline constexpr const char* kPythonProfilingSection = "python_profiling";

struct PythonProfilingPlan {
  bool enabled = true;  // false: --profiler-config turns python profiling off
  PythonProfiler profiler = PythonProfiler::sampling;
  CprofileTimer timer = CprofileTimer::total_time;
  ProfilingWindow window;
  std::string config_file;
  std::string disabled_reason;

  bool cprofile() const { return enabled && profiler == PythonProfiler::cprofile; }
  bool sampled_stats() const { return enabled && profiler == PythonProfiler::sampling; }
};

// What the command line asked for; unset fields come from config_file, then the defaults.
struct PythonProfilingRequest {
  std::optional<ProfilingWindow> window;
  std::optional<PythonProfiler> profiler;
  std::optional<CprofileTimer> timer;
  std::string config_file;  // --profiler-config; empty: none
};

// Errors: what read_profiler_config reports. A config that turns profiling off is warned about.
Result<PythonProfilingPlan> plan_python_profiling(const PythonProfilingRequest& request);

// {"enabled", "profiler", "window": {"kind", "description", start_step, ...}, "cprofile_timer",
// "profiler_config", "disabled_reason"}.
nlohmann::json python_profiling_json(const PythonProfilingPlan& plan);
// Replaces the manifest's section with the plan's.
void set_python_profiling_section(store::Manifest& manifest, const PythonProfilingPlan& plan);
// The window of the manifest's section; the default window (every interval) when there is none.
// A section whose window values are out of range is an error naming `source`.
Result<ProfilingWindow> recorded_window(const store::Manifest& manifest, const std::string& source);

}  // namespace sprof::window
