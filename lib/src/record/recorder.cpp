#include "record/record_session.hpp"
#include "sprof/recorder.hpp"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

#include "sprof/bootstrap.hpp"
#include "sprof/interval_stats_hook.hpp"
#include "sprof/profiling_window.hpp"
#include "sprof/gpu_hook.hpp"
#include "sprof/sysmon.hpp"
#include "sprof/sysmon_hook.hpp"
#include "sprof/clock.hpp"

namespace sprof::recorder {
namespace {

// Deterministic mode: the bootstrap's cProfile settings go into the target's environment; the
// plan goes into the manifest for the stages that write stats afterwards (stats-dirs).
class PythonProfilingHook : public launch::RecordHooks {
 public:
  explicit PythonProfilingHook(const window::PythonProfilingPlan& plan) : plan_(plan) {}
  Status prepare_child(const std::filesystem::path& output_dir, launch::ChildSetup& setup) override {
    if (plan_.cprofile()) {
      bootstrap::CprofileOptions options;
      options.profile_dir = output_dir;
      options.window = plan_.window;
      options.timer = plan_.timer;
      for (auto& variable : bootstrap::cprofile_environment(options)) setup.env.push_back(std::move(variable));
    }
    return {};
  }
  Status on_finish(const std::filesystem::path&, store::Manifest& manifest) override {
    window::set_python_profiling_section(manifest, plan_);
    return {};
  }

 private:
  const window::PythonProfilingPlan& plan_;
};

// Epoch microseconds on CLOCK_MONOTONIC plus one fixed offset, like the samples and markers, so a
// clock step during the run cannot shift the system metrics against them.
std::function<int64_t()> monotonic_epoch_us() {
  const int64_t mono = monotonic_ns();
  const int64_t offset_ns = realtime_ns() - mono;
  return [offset_ns] { return (monotonic_ns() + offset_ns) / 1000; };
}

Status check_plan(const RecordPlan& plan) {
  const launch::RecordOptions& launch = plan.launch;
  if (launch.command.empty() && launch.attach_pid == 0) {
    return make_error(ErrorKind::usage, "record: give a command to run (sprof record python3 train.py) or --pid PID");
  }
  if (!launch.command.empty() && launch.attach_pid != 0) {
    return make_error(ErrorKind::usage, "record: give --pid PID or a command, not both");
  }
  if (plan.python.cprofile() && launch.attach_pid != 0) {
    return make_error(ErrorKind::usage,
                      "--python-profiler cprofile needs a launched command: cProfile cannot be injected into --pid");
  }
  if (plan.python.cprofile() && !plan.steps.inject) {
    return make_error(ErrorKind::usage,
                      "--python-profiler cprofile runs cProfile through sprof's bootstrap, which --no-inject turns off");
  }
  if (plan.system_interval_ms) SPROF_TRY_STATUS(sysmon::validate_interval(*plan.system_interval_ms));
  for (const std::string& name : plan.steps.step_functions) {
    // NAME, Class.method, module:function or module:Class.method: dotted identifiers, one colon.
    size_t colon = name.find(':');
    std::string_view module = colon == std::string::npos ? std::string_view() : std::string_view(name).substr(0, colon);
    std::string_view function = colon == std::string::npos ? std::string_view(name) : std::string_view(name).substr(colon + 1);
    auto dotted = [](std::string_view s) {
      if (s.empty() || s.front() == '.' || s.back() == '.' || s.find("..") != std::string_view::npos) return false;
      return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '.' || c >= 0x80; });
    };
    if (!dotted(function) || (colon != std::string::npos && !dotted(module))) {
      return make_error(ErrorKind::usage,
                        "--step-fn {}: expected NAME, Class.method, module:function or module:Class.method", name);
    }
  }
  return {};
}

}  // namespace

Result<Recording> record(const RecordPlan& plan, const std::vector<launch::RecordHooks*>& observers) {
  SPROF_TRY_STATUS(check_plan(plan));
  if (plan.launch.attach_pid != 0 && plan.steps.step_functions.empty()) {
    spdlog::info("an attached process cannot be injected: no steps unless --step-fn names the step function");
  }

  // The hooks run in this order at every event; at the end, the step hook's timeline must exist
  // before the interval stats are cut along it.
  std::vector<launch::RecordHooks*> hooks;
  PythonProfilingHook python_profiling(plan.python);
  hooks.push_back(&python_profiling);
  std::unique_ptr<sysmon::SystemMonitorHook> system_metrics;
  if (plan.system_interval_ms) {
    sysmon::MonitorOptions monitor;
    monitor.interval_ms = *plan.system_interval_ms;
    monitor.epoch_us = monotonic_epoch_us();
    monitor.node_id = launch::system_node_id(launch::node_host());
    system_metrics = std::make_unique<sysmon::SystemMonitorHook>(std::move(monitor));
    hooks.push_back(system_metrics.get());
  }
  gpu::GpuRecordHook gpu_tracing(plan.gpu);
  hooks.push_back(&gpu_tracing);
  bootstrap::StepRecordHook steps(plan.steps);
  hooks.push_back(&steps);

  intervals::WriteOptions stats_options;
  stats_options.timer = plan.stats_timer;
  stats_options.window = plan.python.window.describe();
  stats_options.progress = plan.stats_progress;
  // The timeline the step hook built, and the window resolved per process against it (smdebug's
  // lazily filled start step / start time come from each process's first step).
  intervals::IntervalStatsHook interval_stats(
      stats_options,
      [&steps, &plan](const std::filesystem::path& dir,
                      const store::Manifest& manifest) -> Result<intervals::IntervalStatsHook::Inputs> {
        intervals::IntervalStatsHook::Inputs inputs;
        if (steps.timeline()) {
          inputs.timeline = *steps.timeline();
        } else {
          SPROF_TRY(inputs.timeline, timeline::build_profile_timeline(dir, &manifest));
        }
        window::TimelineWindows windows(plan.python.window, inputs.timeline,
                                        manifest.epoch_offset_ns());
        inputs.include = [windows = std::move(windows)](const intervals::ProcessInterval& interval) {
          return windows.contains(interval.pid, interval.interval);
        };
        return inputs;
      });
  // Sampled stats only in sampling mode (smdebug writes one profiler's stats), and not when
  // --profiler-config turns python profiling off.
  if (plan.python.sampled_stats()) hooks.push_back(&interval_stats);
  // Observers last: in housekeeping they find the markers drained, and at the end the step
  // trace and the stats directories written.
  hooks.insert(hooks.end(), observers.begin(), observers.end());

  RecordSession session(plan.launch, hooks, [](pid_t pid) { return pyframes::PythonProcess::attach(pid); });
  SPROF_TRY(launch::RecordResult result, session.run());
  Recording recording{std::move(result), steps.summary(), interval_stats.summary()};
  return recording;
}

}  // namespace sprof::recorder
