#include "query_args.hpp"

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

}  // namespace sprof::cli
