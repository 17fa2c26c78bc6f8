#pragma once
// sprof record's flags: what they set (declared in record_flags.cpp).

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "query_args.hpp"
#include "sprof/custom_rules.hpp"
#include "sprof/launch.hpp"
#include "sprof/python_profiling.hpp"
#include "sprof/result.hpp"
#include "sprof/rule_watch.hpp"
#include "sprof/step_hook.hpp"
#include "sprof/sysmon.hpp"
#include "sprof/trace_windows.hpp"
#include "window_flags.hpp"

namespace sprof::cli {

struct RecordFlags {
  launch::RecordOptions options;
  bool blocking = false;
  bool nonblocking = false;
  TimeViewFlags time;  // the closing summary's
  bool gil = false;
  std::string output;
  // System metrics (sysmon): smdebug's ProfilingIntervalInMilliseconds, or off.
  int system_interval_ms = sysmon::kDefaultIntervalMs;
  bool no_system_metrics = false;
  bootstrap::StepHookOptions steps;  // --step-fn
  bool no_inject = false;
  bool no_torch = false;
  std::string python_timer = "total_time";  // per-interval stats directories
  std::string gpu = "auto";
  std::string cupti;
  // Per-step Chrome traces on a schedule, named like Composer's profiler's.
  std::string trace_schedule;
  traces::TraceWindowsOptions traces;
  double upload_interval_s = 10;  // -o s3://...
  // Rules while the job runs.
  watch::RuleWatchOptions watch;  // --rule and --action as given
  rules::CustomRuleSources custom;
  std::string fail_on;
};

// --- Profiling windows and deterministic mode (--python-profiler cprofile) ---------------------

struct PythonProfilingFlags {
  std::string profiler;  // "" = sampling unless --profiler-config names one
  std::string timer;     // "" = the config's cProfileTimer, else total_time
  WindowFlags window;
  std::string config_file;
};

void add_record_flags(CLI::App* sub, RecordFlags& flags, PythonProfilingFlags& python);

// The python-profiling flags as a request: unset values come from --profiler-config, then the
// defaults.
Result<window::PythonProfilingRequest> python_profiling_request(const PythonProfilingFlags& f);

}  // namespace sprof::cli
