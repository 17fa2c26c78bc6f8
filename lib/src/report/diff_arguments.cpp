// The text of diff's step ranges and thresholds, parsed (usage errors name the flag).

#include <exception>

#include "sprof/profile_diff.hpp"

namespace sprof::report {

Status parse_diff_steps(const std::string& flag, const std::string& text, DiffSideInput& side) {
  if (text.empty()) return {};
  auto number = [&](const std::string& part) -> Result<int64_t> {
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() || value < 0) {
      return make_error(ErrorKind::usage, "{} {}: give steps as FIRST-LAST, FIRST- or STEP (numbers of the mode's steps)",
                        flag, text);
    }
    return value;
  };
  size_t dash = text.find('-');
  SPROF_TRY(int64_t first, number(text.substr(0, dash)));
  side.first_step = first;
  if (dash == std::string::npos) {
    side.last_step = first;
  } else if (dash + 1 < text.size()) {
    SPROF_TRY(int64_t last, number(text.substr(dash + 1)));
    if (last < first) return make_error(ErrorKind::usage, "{} {}: the last step comes before the first", flag, text);
    side.last_step = last;
  }
  return {};
}

Result<RegressionThresholds> parse_thresholds(std::optional<double> every, const std::vector<std::string>& specs) {
  RegressionThresholds t;
  if (every) t.step = t.iteration = t.input_wait = t.function = t.kernel = *every;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    std::string kind = spec.substr(0, eq);
    double value = 0;
    size_t used = 0;
    try {
      if (eq != std::string::npos) value = std::stod(spec.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    std::optional<double>* slot = kind == "step" ? &t.step : kind == "iteration" ? &t.iteration
                                  : kind == "input_wait"                       ? &t.input_wait
                                  : kind == "function"                         ? &t.function
                                  : kind == "kernel"                           ? &t.kernel
                                                                               : nullptr;
    if (slot == nullptr || eq == std::string::npos || used == 0 || used != spec.size() - eq - 1 || value < 0) {
      return make_error(ErrorKind::usage, "--threshold {}: give KIND=PERCENT, KIND one of step, iteration, input_wait, "
                        "function, kernel", spec);
    }
    *slot = value;
  }
  return t;
}

}  // namespace sprof::report
