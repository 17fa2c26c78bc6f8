#include "common/json_text.hpp"

#include <cmath>
#include <ctime>

#include <fmt/format.h>

namespace sprof::store {

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", u);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

void append_python_float(std::string& out, double value) {
  if (!std::isfinite(value)) value = 0.0;
  size_t start = out.size();
  fmt::format_to(std::back_inserter(out), "{}", value);
  std::string_view written(out.data() + start, out.size() - start);
  if (written.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

void append_epoch_seconds(std::string& out, int64_t epoch_us) {
  bool negative = epoch_us < 0;
  uint64_t magnitude = negative ? static_cast<uint64_t>(-(epoch_us + 1)) + 1 : static_cast<uint64_t>(epoch_us);
  std::string fraction = fmt::format("{:06d}", magnitude % 1000000);
  while (fraction.size() > 1 && fraction.back() == '0') fraction.pop_back();
  fmt::format_to(std::back_inserter(out), "{}{}.{}", negative ? "-" : "", magnitude / 1000000, fraction);
}

std::string utc_date_hour(int64_t epoch_s) {
  std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04d}{:02d}{:02d}{:02d}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour);
}

bool json_depth_within(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

}  // namespace sprof::store
