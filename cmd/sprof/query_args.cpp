#include "query_args.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace sprof::cli {

std::vector<std::string> profile_mode_names() {
  std::vector<std::string> names;
  for (Mode m : kAllModes) names.emplace_back(sprof::to_string(m));
  return names;
}

std::vector<std::string> step_phase_names() {
  std::vector<std::string> names;
  for (Phase p : kAllPhases) names.emplace_back(sprof::to_string(p));
  return names;
}

Mode mode_from_name(const std::string& name) {
  return parse_mode(name).value_or(Mode::train);
}

Phase phase_from_name(const std::string& name) {
  return parse_phase(name).value_or(Phase::stepstart);
}

Result<double> parse_step_arg(const std::string& flag, const std::string& text, bool is_end) {
  if (text == "*") return is_end ? std::numeric_limits<double>::infinity() : -1.0;
  auto step = store::parse_python_int(text);
  if (!step) {
    return make_error(ErrorKind::usage, "{}: '{}' is not a step number (an integer or '*')", flag,
                      text);
  }
  return static_cast<double>(*step);
}

Result<double> parse_time_arg(const std::string& flag, const std::string& text) {
  std::string number = text;
  double scale = 1.0;
  auto ends_with = [&](const char* suffix) {
    std::string s(suffix);
    return number.size() > s.size() && number.compare(number.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("us")) {
    number.resize(number.size() - 2);
  } else if (ends_with("ms")) {
    number.resize(number.size() - 2);
    scale = 1e3;
  } else if (ends_with("s")) {
    number.resize(number.size() - 1);
    scale = 1e6;
  }
  auto value = store::parse_python_float(number);
  if (!value || std::isnan(*value)) {
    return make_error(ErrorKind::usage,
                      "{}: '{}' is not a time (microseconds since the epoch, or a number with "
                      "unit us, ms or s)",
                      flag, text);
  }
  return *value * scale;
}

void add_run_selection_options(CLI::App* app, RunSelectionFlags& flags, const std::string& what) {
  app->add_option("--mode", flags.mode, fmt::format("Only {} inside steps of this mode (train, eval, predict, global)", what))
      ->check(CLI::IsMember(profile_mode_names()));
  app->add_option("--start-step", flags.start_step,
                  fmt::format("Only {} inside steps start..end, both included (work that starts inside them)", what));
  app->add_option("--end-step", flags.end_step, "Last step, included (as fetch-by-step's)");
  app->add_option("--start-time", flags.start_time,
                  fmt::format("Only {} from this time: epoch µs, or with a unit (1596585374.96s, ms)", what));
  app->add_option("--end-time", flags.end_time, fmt::format("Only {} before this time, as --start-time", what));
}

Status check_run_selection(const RunSelectionFlags& flags) {
  if (flags.steps() && flags.times()) {
    return make_error(ErrorKind::usage,
                      "give steps (--start-step/--end-step/--mode) or times (--start-time/--end-time), not both");
  }
  return {};
}

Result<StepSelection> parse_step_selection(const RunSelectionFlags& flags) {
  StepSelection out;
  if (!flags.mode.empty()) out.mode = mode_from_name(flags.mode);
  if (!flags.start_step.empty()) {
    SPROF_TRY(double v, parse_step_arg("--start-step", flags.start_step, false));
    if (v >= 0) out.first = static_cast<int64_t>(v);
  }
  if (!flags.end_step.empty()) {
    SPROF_TRY(double v, parse_step_arg("--end-step", flags.end_step, true));
    // Inclusive, as fetch-by-step's [start, end] (smdebug's python_stats queries): one definition.
    if (std::isfinite(v)) out.last = static_cast<int64_t>(v);
  }
  return out;
}

Result<TimeSelection> parse_time_selection(const RunSelectionFlags& flags) {
  TimeSelection out;
  if (!flags.start_time.empty()) {
    SPROF_TRY(double us, parse_time_arg("--start-time", flags.start_time));
    out.start_us = us;
  }
  if (!flags.end_time.empty()) {
    SPROF_TRY(double us, parse_time_arg("--end-time", flags.end_time));
    out.end_us = us;
  }
  if (out.start_us && out.end_us && *out.end_us <= *out.start_us) {
    return make_error(ErrorKind::usage, "--end-time must be after --start-time");
  }
  return out;
}

}  // namespace sprof::cli
