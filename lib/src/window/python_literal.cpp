// A recursive-descent reader for the Python literal subset smdebug's configs use.

#include "window/python_literal.hpp"

#include <cctype>
#include <cmath>

#include "sprof/stats_dir.hpp"

namespace sprof::window {
namespace {

constexpr int kMaxDepth = 64;

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Result<nlohmann::json> document() {
    SPROF_TRY(nlohmann::json value, parse_value(0));
    skip_space();
    if (pos_ != text_.size()) return fail("unexpected '{}' after the value", text_[pos_]);
    return value;
  }

 private:
  template <typename... Args>
  Error fail(fmt::format_string<Args...> format, Args&&... args) const {
    return make_error(ErrorKind::bad_input, "{} at character {}", fmt::format(format, std::forward<Args>(args)...),
                      pos_);
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  Result<nlohmann::json> parse_value(int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than {}", kMaxDepth);
    skip_space();
    if (pos_ >= text_.size()) return fail("unexpected end");
    char c = text_[pos_];
    if (c == '{') return parse_dict(depth);
    if (c == '[') return parse_sequence(depth, ']');
    if (c == '(') return parse_sequence(depth, ')');
    if (c == '\'' || c == '"') return parse_string();
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t begin = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        ++pos_;
      }
      std::string_view word = text_.substr(begin, pos_ - begin);
      if (word == "True") return nlohmann::json(true);
      if (word == "False") return nlohmann::json(false);
      if (word == "None") return nlohmann::json(nullptr);
      pos_ = begin;
      return fail("'{}' is not a literal (only str, int, float, True, False, None, dict, list, tuple)", word);
    }
    return fail("unexpected '{}'", c);
  }

  Result<nlohmann::json> parse_dict(int depth) {
    ++pos_;  // '{'
    nlohmann::json out = nlohmann::json::object();
    for (;;) {
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return out;
      }
      SPROF_TRY(nlohmann::json key, parse_value(depth + 1));
      std::string name;
      if (key.is_string()) {
        name = key.get<std::string>();
      } else if (key.is_number() || key.is_boolean() || key.is_null()) {
        name = key.dump();  // Python allows them; JSON keys are strings
      } else {
        return fail("a dict key must be a str or a number");
      }
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':' after a dict key");
      ++pos_;
      SPROF_TRY(nlohmann::json value, parse_value(depth + 1));
      out[name] = std::move(value);  // a repeated key keeps the last value, as in Python
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return out;
      }
      return fail("expected ',' or '}}' in a dict");
    }
  }

  Result<nlohmann::json> parse_sequence(int depth, char close) {
    ++pos_;
    nlohmann::json out = nlohmann::json::array();
    for (;;) {
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == close) {
        ++pos_;
        return out;
      }
      SPROF_TRY(nlohmann::json value, parse_value(depth + 1));
      out.push_back(std::move(value));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == close) {
        ++pos_;
        return out;
      }
      return fail("expected ',' or '{}'", close);
    }
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Result<nlohmann::json> parse_string() {
    char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == quote) return nlohmann::json(out);
      if (c == '\n') return fail("end of line inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case 'x':
        case 'u':
        case 'U': {
          size_t digits = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          if (pos_ + digits > text_.size()) return fail("truncated \\{} escape", e);
          uint32_t cp = 0;
          for (size_t i = 0; i < digits; ++i) {
            char h = text_[pos_++];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return fail("bad \\{} escape", e);
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                     ? h - '0'
                                                     : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          }
          if (cp > 0x10FFFF) return fail("escape beyond U+10FFFF");
          append_utf8(out, cp);
          break;
        }
        default:  // Python keeps unknown escapes as written
          out += '\\';
          out += e;
      }
    }
    return fail("unterminated string");
  }

  Result<nlohmann::json> parse_number() {
    size_t begin = pos_;
    if (text_[pos_] == '+' || text_[pos_] == '-') ++pos_;
    bool is_float = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '_') {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      } else {
        break;
      }
    }
    std::string digits;
    for (char c : text_.substr(begin, pos_ - begin)) {
      if (c != '_') digits += c;
    }
    if (!is_float) {
      if (auto value = store::parse_python_int(digits)) return nlohmann::json(*value);
    }
    auto value = store::parse_python_float(digits);
    if (!value || !std::isfinite(*value)) {
      pos_ = begin;
      return fail("'{}' is not a number sprof reads", digits);
    }
    return nlohmann::json(*value);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Result<nlohmann::json> parse_python_literal(std::string_view text) { return Reader(text).document(); }

}  // namespace sprof::window
