#include "sprof/json_output.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace sprof {
namespace {

using Json = nlohmann::ordered_json;

// What nlohmann writes verbatim: it escapes '"', '\\' and control characters, and decodes
// anything from 0x7F up (to validate or replace it).
bool printable_ascii(std::string_view text) {
  // Eight bytes at a time: no byte >= 0x80, none < 0x20, none equal to 0x7F, '"' or '\\'.
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto has_zero_byte = [](uint64_t v) { return ((v - kOnes) & ~v & kHigh) != 0; };
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, text.data() + i, 8);
    if ((w & kHigh) != 0 || ((w - 0x20 * kOnes) & ~w & kHigh) != 0 || has_zero_byte(w ^ (0x7F * kOnes)) ||
        has_zero_byte(w ^ (0x22 * kOnes)) || has_zero_byte(w ^ (0x5C * kOnes))) {
      return false;
    }
  }
  for (; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x20 || u > 0x7E || u == '"' || u == '\\') return false;
  }
  return true;
}

// A line break and the spaces of up to kIndentSpaces of indentation, appended in one piece.
constexpr size_t kIndentSpaces = 64;
constexpr std::string_view kNewline =
    "\n                                                                ";
static_assert(kNewline.size() == kIndentSpaces + 1);

void append_newline(std::string& out, size_t spaces) {
  if (spaces <= kIndentSpaces) {
    out.append(kNewline.data(), spaces + 1);
  } else {
    out += '\n';
    out.append(spaces, ' ');
  }
}

// Subtype of the binary values prewritten_json makes: "sprof" and the indent + 1 below it.
constexpr uint64_t kPrewrittenSubtype = 0x7370726f66ull << 8;

void append_string(std::string& out, std::string_view text) {
  if (printable_ascii(text)) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <class Int>
void append_integer(std::string& out, Int value) {
  std::array<char, 24> digits;
  auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), end);
}

void append_real(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  std::array<char, 64> digits;  // nlohmann's serializer uses a 64-byte buffer and this function
  char* end = nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), end);
}

class TextWriter {
 public:
  // With a `sink`, the text goes there whenever `out` holds kSpillBytes: a large answer is
  // written through one reused buffer instead of one that grows (and is paged in) to its size.
  TextWriter(std::string& out, int indent, std::FILE* sink = nullptr)
      : out_(out), pretty_(indent >= 0), step_(pretty_ ? indent : 0), sink_(sink) {}

  void spill() {
    if (sink_ != nullptr && out_.size() >= kSpillBytes) {
      std::fwrite(out_.data(), 1, out_.size(), sink_);
      out_.clear();
    }
  }

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
  void newline(int level) { append_newline(out_, static_cast<size_t>(level * step_)); }

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
      spill();
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
      spill();
    }
    if (pretty_) newline(level);
    out_ += ']';
  }

  void string(const std::string& text) { append_string(out_, text); }
  template <class Int>
  void integer(Int value) {
    append_integer(out_, value);
  }
  void real(double value) { append_real(out_, value); }

  // A prewritten value: its text with each line indented for this level.
  void prewritten(const Json::binary_t& bytes, int level) {
    if (static_cast<int>(bytes.subtype() - kPrewrittenSubtype) - 1 != (pretty_ ? step_ : -1)) {
      throw std::logic_error("a prewritten JSON value spliced into a document of another indent");
    }
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (!pretty_ || level == 0) {
      out_ += text;
      return;
    }
    size_t from = 0;
    for (size_t at = text.find('\n'); at != std::string_view::npos; at = text.find('\n', from)) {
      out_.append(text.substr(from, at - from));
      newline(level);
      spill();
      from = at + 1;
    }
    out_.append(text.substr(from));
  }

  // nlohmann's form of a binary value (sprof's answers hold none; here for completeness).
  void binary(const Json::binary_t& bytes, int level) {
    if (bytes.has_subtype() && (bytes.subtype() >> 8) == (kPrewrittenSubtype >> 8)) {
      prewritten(bytes, level);
      return;
    }
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

  static constexpr size_t kSpillBytes = size_t{1} << 20;

  std::string& out_;
  bool pretty_;
  int step_;
  std::FILE* sink_;
};

}  // namespace

void append_json_text(std::string& out, const nlohmann::ordered_json& json, int indent) {
  TextWriter(out, indent).value(json, 0);
}

void write_json_text(std::FILE* out, const nlohmann::ordered_json& json, int indent) {
  std::string buffer;
  TextWriter(buffer, indent, out).value(json, 0);
  buffer += '\n';
  std::fwrite(buffer.data(), 1, buffer.size(), out);
}

nlohmann::ordered_json prewritten_json(std::string text, int indent) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  return Json::binary(std::vector<uint8_t>(bytes, bytes + text.size()), kPrewrittenSubtype + uint64_t(indent < 0 ? 0 : indent + 1));
}

void JsonTextWriter::newline(size_t level) { append_newline(out_, level * static_cast<size_t>(step_)); }

// The comma and line break before every array item and object member but the first.
void JsonTextWriter::separate() {
  Level& level = levels_.back();
  if (!level.empty) out_ += ',';
  level.empty = false;
  if (pretty_) newline(levels_.size());
}

// Inside an array, separated from the item before; after key(), nothing.
void JsonTextWriter::before_value() {
  if (!levels_.empty() && levels_.back().array) separate();
}

JsonTextWriter& JsonTextWriter::key(std::string_view name) {
  separate();
  append_string(out_, name);
  out_ += pretty_ ? ": " : ":";
  return *this;
}

JsonTextWriter& JsonTextWriter::open(char bracket, bool array) {
  before_value();
  out_ += bracket;
  levels_.push_back(Level{array, true});
  return *this;
}

JsonTextWriter& JsonTextWriter::close(char bracket) {
  const bool empty = levels_.back().empty;
  levels_.pop_back();
  if (pretty_ && !empty) newline(levels_.size());
  out_ += bracket;
  return *this;
}

JsonTextWriter& JsonTextWriter::string(std::string_view text) {
  before_value();
  append_string(out_, text);
  return *this;
}

JsonTextWriter& JsonTextWriter::integer(int64_t value) {
  before_value();
  append_integer(out_, value);
  return *this;
}

JsonTextWriter& JsonTextWriter::real(double value) {
  before_value();
  append_real(out_, value);
  return *this;
}

JsonTextWriter& JsonTextWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonTextWriter& JsonTextWriter::boolean(bool value) {
  before_value();
  out_ += value ? "true" : "false";
  return *this;
}

JsonTextWriter& JsonTextWriter::json(const nlohmann::ordered_json& value) {
  before_value();
  TextWriter(out_, pretty_ ? step_ : -1).value(value, static_cast<int>(levels_.size()));
  return *this;
}

}  // namespace sprof
