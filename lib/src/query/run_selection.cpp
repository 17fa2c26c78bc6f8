#include "sprof/run_selection.hpp"

#include <cmath>
#include <limits>

#include "sprof/stats_dir.hpp"

namespace sprof::query {

Result<double> parse_step_arg(const std::string& flag, const std::string& text, bool is_end) {
  if (text == "*") return is_end ? std::numeric_limits<double>::infinity() : -1.0;
  auto step = store::parse_python_int(text);
  if (!step) return make_error(ErrorKind::usage, "{}: '{}' is not a step number (an integer or '*')", flag, text);
  return static_cast<double>(*step);
}

Result<double> parse_time_arg(const std::string& flag, const std::string& text) {
  std::string_view number = text;
  double scale = 1.0;
  // The two-letter units before `s`, which ends them too.
  if (number.size() > 2 && number.ends_with("us")) {
    number.remove_suffix(2);
  } else if (number.size() > 2 && number.ends_with("ms")) {
    number.remove_suffix(2);
    scale = 1e3;
  } else if (number.size() > 1 && number.ends_with("s")) {
    number.remove_suffix(1);
    scale = 1e6;
  }
  auto value = store::parse_python_float(std::string(number));
  if (!value || std::isnan(*value)) {
    return make_error(ErrorKind::usage,
                      "{}: '{}' is not a time (microseconds since the epoch, or a number with unit us, ms or s)", flag,
                      text);
  }
  return *value * scale;
}

Result<RunSelection> parse_run_selection(const RunSelectionText& text) {
  if (text.steps() && text.times()) {
    return make_error(ErrorKind::usage,
                      "give steps (--start-step/--end-step/--mode) or times (--start-time/--end-time), not both");
  }
  RunSelection out;
  if (text.steps()) {
    StepRange& steps = out.steps.emplace();
    if (!text.mode.empty()) steps.mode = parse_mode(text.mode);
    if (!text.start_step.empty()) {
      SPROF_TRY(double v, parse_step_arg("--start-step", text.start_step, false));
      if (v >= 0) steps.first = static_cast<int64_t>(v);
    }
    if (!text.end_step.empty()) {
      SPROF_TRY(double v, parse_step_arg("--end-step", text.end_step, true));
      if (std::isfinite(v)) steps.last = static_cast<int64_t>(v);
    }
  }
  if (text.times()) {
    TimeRange& times = out.times.emplace();
    if (!text.start_time.empty()) {
      SPROF_TRY(times.start_us, parse_time_arg("--start-time", text.start_time));
    }
    if (!text.end_time.empty()) {
      SPROF_TRY(times.end_us, parse_time_arg("--end-time", text.end_time));
    }
    if (times.start_us && times.end_us && *times.end_us <= *times.start_us) {
      return make_error(ErrorKind::usage, "--end-time must be after --start-time");
    }
  }
  return out;
}

Result<std::optional<std::vector<SampleWindow>>> selected_sample_windows(const Profile& profile,
                                                                         const RunSelection& selection,
                                                                         const std::string& dir) {
  if (!selection.steps && !selection.times) return std::optional<std::vector<SampleWindow>>{};
  SPROF_TRY(const store::ProfileSamples* samples, profile.samples());
  if (!samples->manifest) {
    return make_error(ErrorKind::usage, "{}: no sprof.json, so steps and times cannot select samples", dir);
  }
  std::vector<SampleWindow> windows;
  if (selection.steps) {
    const StepRange& steps = *selection.steps;
    SPROF_TRY(const timeline::StepTimeline* timeline, profile.step_timeline());
    windows = step_windows(*timeline, steps.mode, steps.first, steps.last);
    if (windows.empty()) return make_error(ErrorKind::usage, "no step of {} matches the step flags", dir);
  } else {
    auto [begin_ns, end_ns] = selection.times->clock_window(samples->manifest->epoch_offset_ns());
    std::vector<int32_t> pids;
    for (const auto& p : samples->processes) pids.push_back(p.log.pid());
    windows = time_windows(pids, begin_ns, end_ns);
  }
  return std::optional<std::vector<SampleWindow>>{std::move(windows)};
}

}  // namespace sprof::query
