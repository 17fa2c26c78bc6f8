// Parameters, defaults and small helpers shared by the rules.

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "rules/numeric.hpp"
#include "rules/rule.hpp"
#include "common/json_text.hpp"

namespace sprof::rules {

std::string ParamValue::str() const {
  if (none) return "None";
  if (!text.empty()) return text;
  if (integral) return fmt::format("{}", static_cast<int64_t>(number));
  return python_float_text(number);
}

void Params::set(const std::string& name, ParamValue value) {
  for (auto& [key, v] : values_) {
    if (key == name) {
      v = std::move(value);
      return;
    }
  }
  values_.emplace_back(name, std::move(value));
}

const ParamValue& Params::get(const std::string& name) const {
  for (const auto& [key, v] : values_) {
    if (key == name) return v;
  }
  static const ParamValue missing{};
  return missing;  // unreachable for registered parameters: defaults fill every one
}

Result<ParamValue> parse_param_value(const std::string& rule, const ParamInfo& info, const std::string& text) {
  ParamValue value;
  if (info.kind == ParamKind::mode) {
    if (text.empty() || text == "None") {
      value.none = true;
    } else {
      value.text = text;
    }
    return value;
  }
  const char* begin = text.c_str();
  char* end = nullptr;
  double number = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || !std::isfinite(number)) {
    return make_error(ErrorKind::usage, "{}_{}: '{}' is not a number", rule, info.name, text);
  }
  value.number = number;
  value.integral = text.find_first_of(".eEnN") == std::string::npos;
  switch (info.kind) {
    case ParamKind::percent:
      if (!(number >= 0 && number <= 100)) {
        return make_error(ErrorKind::usage, "{}_{}: {} must be a valid percentile (0 to 100), got {}", rule, info.name,
                          info.name, text);
      }
      break;
    case ParamKind::positive:
      if (!(number > 0)) {
        return make_error(ErrorKind::usage, "{}_{}: {} must be positive, got {}", rule, info.name, info.name, text);
      }
      break;
    case ParamKind::count:
      if (!(number > 0) || std::floor(number) != number || number > 9.0e15) {
        return make_error(ErrorKind::usage, "{}_{}: {} must be a positive integer, got {}", rule, info.name,
                          info.name, text);
      }
      value.integral = true;
      break;
    case ParamKind::mode:
      break;
  }
  return value;
}

Params default_params(const RuleInfo& info) {
  Params params;
  for (const auto& p : info.params) {
    auto value = parse_param_value(info.name, p, p.default_value);
    params.set(p.name, value.ok() ? value.value() : ParamValue{});
  }
  return params;
}

bool has_dimension(const RulesInput& input, std::string_view dimension) {
  for (const auto& m : input.system) {
    if (m.dimension == dimension) return true;
  }
  return false;
}

bool has_step_events(const RulesInput& input) {
  for (const auto& e : input.framework()) {
    if (e.name.find("Step:ModeKeys") != std::string::npos) return true;
  }
  return false;
}

std::string format_number(double value) {
  if (std::floor(value) == value && std::abs(value) < 1e15) return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{:.1f}", value);
}

std::string python_float_text(double value) {
  std::string out;
  store::append_python_float(out, value);
  return out;
}

void append_box(Json& entry, const BoxStats& b, double iqr_p25) {
  double iqr = b.p75 - iqr_p25;
  entry["p25"] = b.p25;
  entry["p50"] = b.p50;
  entry["p75"] = b.p75;
  entry["p95"] = b.p95;
  entry["upper"] = std::min(b.p75 + 1.5 * iqr, b.max);
  entry["lower"] = std::max(b.p25 - 1.5 * iqr, b.min);
}

}  // namespace sprof::rules
