#include "sprof/json_output.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <string_view>

namespace sprof {
namespace {

using Json = nlohmann::ordered_json;

// What nlohmann writes verbatim: it escapes '"', '\\' and control characters, and decodes
// anything from 0x7F up (to validate or replace it).
bool printable_ascii(std::string_view text) {
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7E || c == '"' || c == '\\') return false;
  }
  return true;
}

class TextWriter {
 public:
  TextWriter(std::string& out, int indent) : out_(out), pretty_(indent >= 0), step_(pretty_ ? indent : 0) {}

  void value(const Json& v, int level) {
    switch (v.type()) {
      case Json::value_t::object: object(v.get_ref<const Json::object_t&>(), level); return;
      case Json::value_t::array: array(v.get_ref<const Json::array_t&>(), level); return;
      case Json::value_t::string: string(v.get_ref<const Json::string_t&>()); return;
      case Json::value_t::boolean: out_ += v.get<bool>() ? "true" : "false"; return;
      case Json::value_t::number_integer: integer(v.get<Json::number_integer_t>()); return;
      case Json::value_t::number_unsigned: integer(v.get<Json::number_unsigned_t>()); return;
      case Json::value_t::number_float: real(v.get<Json::number_float_t>()); return;
      case Json::value_t::binary: binary(v.get_binary(), level); return;
      case Json::value_t::discarded: out_ += "<discarded>"; return;
      case Json::value_t::null: out_ += "null"; return;
    }
  }

 private:
  void newline(int level) {
    out_ += '\n';
    out_.append(static_cast<size_t>(level * step_), ' ');
  }

  void object(const Json::object_t& members, int level) {
    if (members.empty()) {
      out_ += "{}";
      return;
    }
    out_ += '{';
    bool first = true;
    for (const auto& [key, member] : members) {
      if (!first) out_ += ',';
      first = false;
      if (pretty_) newline(level + 1);
      string(key);
      out_ += pretty_ ? ": " : ":";
      value(member, level + 1);
    }
    if (pretty_) newline(level);
    out_ += '}';
  }

  void array(const Json::array_t& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    bool first = true;
    for (const Json& item : items) {
      if (!first) out_ += ',';
      first = false;
      if (pretty_) newline(level + 1);
      value(item, level + 1);
    }
    if (pretty_) newline(level);
    out_ += ']';
  }

  void string(const std::string& text) {
    if (printable_ascii(text)) {
      out_ += '"';
      out_ += text;
      out_ += '"';
      return;
    }
    out_ += Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
  }

  template <class Int>
  void integer(Int value) {
    std::array<char, 24> digits;
    auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), value);
    out_.append(digits.data(), end);
  }

  void real(double value) {
    if (!std::isfinite(value)) {
      out_ += "null";
      return;
    }
    std::array<char, 64> digits;  // nlohmann's serializer uses a 64-byte buffer and this function
    char* end = nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), value);
    out_.append(digits.data(), end);
  }

  // nlohmann's form of a binary value (sprof's answers hold none; here for completeness).
  void binary(const Json::binary_t& bytes, int level) {
    out_ += pretty_ ? "{" : "{\"bytes\":[";
    if (pretty_) {
      newline(level + 1);
      out_ += "\"bytes\": [";
    }
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (i > 0) out_ += pretty_ ? ", " : ",";
      integer(static_cast<unsigned>(bytes[i]));
    }
    out_ += pretty_ ? "]," : "],\"subtype\":";
    if (pretty_) {
      newline(level + 1);
      out_ += "\"subtype\": ";
    }
    if (bytes.has_subtype()) {
      integer(bytes.subtype());
    } else {
      out_ += "null";
    }
    if (pretty_) newline(level);
    out_ += '}';
  }

  std::string& out_;
  bool pretty_;
  int step_;
};

}  // namespace

void append_json_text(std::string& out, const nlohmann::ordered_json& json, int indent) {
  TextWriter(out, indent).value(json, 0);
}

}  // namespace sprof
