#include "sprof/python_profiling.hpp"

#include <spdlog/spdlog.h>

#include "sprof/manifest_sections.hpp"

namespace sprof::window {

Result<PythonProfilingPlan> plan_python_profiling(const PythonProfilingRequest& request) {
  PythonProfilingPlan plan;
  if (!request.config_file.empty()) {
    SPROF_TRY(PythonProfilingConfig config, read_profiler_config(request.config_file));
    plan.config_file = request.config_file;
    plan.enabled = config.enabled;
    plan.disabled_reason = config.disabled_reason;
    plan.window = config.window;
    if (config.profiler) plan.profiler = *config.profiler;
    if (config.timer) plan.timer = *config.timer;
  }
  // Flags on the command line win over the file.
  if (request.window) {
    plan.window = *request.window;
    plan.enabled = true;
  }
  if (request.profiler) plan.profiler = *request.profiler;
  if (request.timer) plan.timer = *request.timer;
  if (!plan.enabled && !plan.disabled_reason.empty()) {
    spdlog::warn("--profiler-config {}: python profiling is off because {}", plan.config_file, plan.disabled_reason);
  }
  return plan;
}

nlohmann::json python_profiling_json(const PythonProfilingPlan& plan) {
  nlohmann::json w = {{"kind", plan.window.spec()}, {"description", plan.window.describe()}};
  if (plan.window.start_step) w["start_step"] = *plan.window.start_step;
  if (plan.window.num_steps) w["num_steps"] = *plan.window.num_steps;
  if (plan.window.start_time_s) w["start_time_s"] = *plan.window.start_time_s;
  if (plan.window.duration_s) w["duration_s"] = *plan.window.duration_s;
  nlohmann::json j = {{"enabled", plan.enabled}, {"profiler", to_string(plan.profiler)}, {"window", w}};
  if (plan.profiler == PythonProfiler::cprofile) j["cprofile_timer"] = to_string(plan.timer);
  if (!plan.config_file.empty()) j["profiler_config"] = plan.config_file;
  if (!plan.disabled_reason.empty()) j["disabled_reason"] = plan.disabled_reason;
  return j;
}

void set_python_profiling_section(store::Manifest& manifest, const PythonProfilingPlan& plan) {
  store::set_section(manifest, kPythonProfilingSection, python_profiling_json(plan).dump());
}

Result<ProfilingWindow> recorded_window(const store::Manifest& manifest, const std::string& source) {
  if (auto doc = store::section_json(manifest, kPythonProfilingSection)) {
    if (!doc->contains("window") || !(*doc)["window"].is_object()) return ProfilingWindow{};
    const auto& w = (*doc)["window"];
    auto get_int = [&](const char* name) {
      return w.contains(name) && w[name].is_number_integer() ? std::optional<int64_t>(w[name].get<int64_t>())
                                                              : std::nullopt;
    };
    auto get_double = [&](const char* name) {
      return w.contains(name) && w[name].is_number() ? std::optional<double>(w[name].get<double>()) : std::nullopt;
    };
    return ProfilingWindow::make(get_int("start_step"), get_int("num_steps"), get_double("start_time_s"),
                                 get_double("duration_s"), source);
  }
  return ProfilingWindow{};
}

}  // namespace sprof::window
