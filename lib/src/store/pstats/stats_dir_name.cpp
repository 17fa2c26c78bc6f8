#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sprof/stats_dir.hpp"

namespace sprof::store {
namespace {

// Python's str.split(sep) for a one-character separator: always at least one field.
std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (true) {
    size_t pos = text.find(sep, begin);
    if (pos == std::string_view::npos) {
      parts.push_back(text.substr(begin));
      return parts;
    }
    parts.push_back(text.substr(begin, pos - begin));
    begin = pos + 1;
  }
}

// Whitespace that Python's int()/float() strip (ASCII whitespace plus the information
// separators \x1c-\x1f, which str.isspace() also counts).
bool is_python_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

std::string_view strip(std::string_view text) {
  while (!text.empty() && is_python_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_python_space(text.back())) text.remove_suffix(1);
  return text;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (x != b[i]) return false;
  }
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

Result<StepPoint> parse_half(std::string_view half, const char* which) {
  auto fields = split(half, '-');
  if (fields.size() != 4) {
    return make_error(ErrorKind::bad_input,
                      "{} half '{}' has {} '-'-separated fields, expected "
                      "<mode>-<step>-<phase>-<time_us>",
                      which, half, fields.size());
  }
  StepPoint point;
  auto mode = parse_mode(fields[0]);
  if (!mode) {
    return make_error(ErrorKind::bad_input,
                      "unknown {} mode '{}' (expected train, eval, predict, global, prestepzero "
                      "or posthookclose)",
                      which, fields[0]);
  }
  point.mode = *mode;
  if (fields[1] != "*") {
    auto step = parse_python_int(fields[1]);
    if (!step) {
      return make_error(ErrorKind::bad_input, "{} step '{}' is neither an integer nor '*'", which,
                        fields[1]);
    }
    point.step = *step;
  }
  auto phase = parse_phase(fields[2]);
  if (!phase) {
    return make_error(ErrorKind::bad_input,
                      "unknown {} phase '{}' (expected start, stepstart, forwardpassend, stepend "
                      "or end)",
                      which, fields[2]);
  }
  point.phase = *phase;
  auto time = parse_python_float(fields[3]);
  if (!time) {
    return make_error(ErrorKind::bad_input, "{} time '{}' is not a number of microseconds", which,
                      fields[3]);
  }
  // float('nan') would parse, but NaN times make smdebug's sort order undefined.
  if (std::isnan(*time)) {
    return make_error(ErrorKind::bad_input, "{} time is NaN", which);
  }
  point.time_us = *time;
  return point;
}

Result<StatsDirName> parse_current(std::string_view start, std::string_view end) {
  StatsDirName parsed;
  parsed.format = NameFormat::current;
  SPROF_TRY(parsed.start, parse_half(start, "start"));
  SPROF_TRY(parsed.end, parse_half(end, "end"));
  return parsed;
}

Result<StatsDirName> parse_old(const std::vector<std::string_view>& fields) {
  auto start = parse_python_float(fields[0]);
  auto end = parse_python_float(fields[1]);
  auto step = parse_python_int(fields[3]);
  if (!start || !end || std::isnan(*start) || std::isnan(*end)) {
    return make_error(ErrorKind::bad_input,
                      "old-format name needs <start_us>_<end_us>_<node_id>_<step>, and '{}' or "
                      "'{}' is not a number of microseconds",
                      fields[0], fields[1]);
  }
  if (!step) {
    return make_error(ErrorKind::bad_input,
                      "old-format name needs <start_us>_<end_us>_<node_id>_<step>, and step '{}' "
                      "is not an integer",
                      fields[3]);
  }
  if (fields[2].empty()) {
    return make_error(ErrorKind::bad_input, "old-format name has an empty node id");
  }
  StatsDirName parsed;
  parsed.format = NameFormat::old;
  parsed.node_id = std::string(fields[2]);
  parsed.start.time_us = *start;
  parsed.end.time_us = *end;
  if (*step == -1) {
    // Profiling from import until step 0.
    parsed.start.mode = Mode::prestepzero;
    parsed.start.step.reset();
    parsed.start.phase = Phase::start;
    parsed.end.mode = Mode::global;
    parsed.end.step = 0;
    parsed.end.phase = Phase::stepstart;
  } else {
    parsed.start.mode = parsed.end.mode = Mode::global;
    parsed.start.step = parsed.end.step = *step;
    parsed.start.phase = Phase::stepstart;
    parsed.end.phase = Phase::stepend;
  }
  return parsed;
}

std::string format_step(const std::optional<int64_t>& step) {
  return step ? std::to_string(*step) : std::string("*");
}

// A time in a current-format name. smdebug writes repr(), but repr() of a time below 1e-4
// ("3e-18") puts a '-' into a '-'-separated field, and no reader (smdebug's or ours) could
// split the name again; such a time is written positionally ("0.000000000000000003"), which
// reads back to the same double.
std::string format_name_time(double value) {
  std::string repr = python_float_repr(value);
  if (value <= 0.0 || repr.find("e-") == std::string::npos) return repr;
  char buf[400];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed);
  if (ec != std::errc()) return repr;
  return std::string(buf, static_cast<size_t>(end - buf));
}

}  // namespace

std::string_view to_string(NameFormat format) {
  return format == NameFormat::old ? "old" : "current";
}

double StatsDirName::start_step_value() const {
  return start.step ? static_cast<double>(*start.step) : -1.0;
}

double StatsDirName::end_step_value() const {
  return end.step ? static_cast<double>(*end.step) : std::numeric_limits<double>::infinity();
}

std::optional<double> parse_python_float(std::string_view text) {
  text = strip(text);
  if (text.empty()) return std::nullopt;
  std::string_view body = text;
  bool negative = false;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  if (iequals(body, "inf") || iequals(body, "infinity")) {
    double inf = std::numeric_limits<double>::infinity();
    return negative ? -inf : inf;
  }
  if (iequals(body, "nan")) return std::numeric_limits<double>::quiet_NaN();
  // digits [. digits] | . digits, then an optional exponent.
  size_t i = 0, int_digits = 0, frac_digits = 0;
  while (i < body.size() && is_digit(body[i])) ++i, ++int_digits;
  if (i < body.size() && body[i] == '.') {
    ++i;
    while (i < body.size() && is_digit(body[i])) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return std::nullopt;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < body.size() && is_digit(body[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  // The text is now plain decimal; from_chars rounds correctly, like Python's float().
  double value = 0.0;
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (ptr != body.data() + body.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Python: overflow gives inf, underflow gives 0.0. Tell them apart by the exponent sign.
    size_t e = body.find_first_of("eE");
    bool tiny = e != std::string_view::npos && e + 1 < body.size() && body[e + 1] == '-';
    value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

std::optional<int64_t> parse_python_int(std::string_view text) {
  text = strip(text);
  if (text.empty()) return std::nullopt;
  bool negative = false;
  if (text.front() == '+' || text.front() == '-') {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  uint64_t magnitude = 0;
  for (char c : text) {
    if (!is_digit(c)) return std::nullopt;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    magnitude = magnitude * 10 + digit;
  }
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (negative) {
    if (magnitude > kMax + 1) return std::nullopt;
    return magnitude == kMax + 1 ? std::numeric_limits<int64_t>::min()
                                 : -static_cast<int64_t>(magnitude);
  }
  if (magnitude > kMax) return std::nullopt;
  return static_cast<int64_t>(magnitude);
}

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form: [-]d[.ddd]e[+-]xx.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  if (ec != std::errc()) return fmt::format("{}", value);
  std::string_view sci(buf, static_cast<size_t>(end - buf));
  bool negative = !sci.empty() && sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  // Python's float_repr_style 'short': decimal point position decpt = exponent + 1; use
  // scientific notation when decpt <= -4 or decpt > 16.
  int decpt = exponent + 1;
  std::string out;
  if (negative) out.push_back('-');
  if (value != 0.0 && (decpt <= -4 || decpt > 16)) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out;
  }
  if (value == 0.0) return out + "0.0";
  if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out += digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits;
    out.append(static_cast<size_t>(decpt) - digits.size(), '0');
    out += ".0";
  } else {
    out += digits.substr(0, static_cast<size_t>(decpt));
    out += '.';
    out += digits.substr(static_cast<size_t>(decpt));
  }
  return out;
}

Result<StatsDirName> parse_stats_dir_name(std::string_view name) {
  auto fields = split(name, '_');
  if (fields.size() == 2) return parse_current(fields[0], fields[1]);
  if (fields.size() == 4) return parse_old(fields);
  return make_error(ErrorKind::bad_input,
                    "name has {} '_'-separated fields; expected 2 "
                    "(<mode>-<step>-<phase>-<start_us>_<mode>-<step>-<phase>-<end_us>) or 4 "
                    "(old format <start_us>_<end_us>_<node_id>_<step>)",
                    fields.size());
}

std::string format_stats_dir_name(const StatsDirName& name) {
  if (name.format == NameFormat::old) {
    int64_t step = name.start.mode == Mode::prestepzero ? -1 : name.start.step.value_or(-1);
    return fmt::format("{}_{}_{}_{}", python_float_repr(name.start.time_us),
                       python_float_repr(name.end.time_us), name.node_id, step);
  }
  return fmt::format("{}-{}-{}-{}_{}-{}-{}-{}", to_string(name.start.mode),
                     format_step(name.start.step), to_string(name.start.phase),
                     format_name_time(name.start.time_us), to_string(name.end.mode),
                     format_step(name.end.step), to_string(name.end.phase),
                     format_name_time(name.end.time_us));
}

}  // namespace sprof::store
