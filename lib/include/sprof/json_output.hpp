#pragma once
// Writing large JSON answers quickly: fetch-by-step and by-phase answer with thousands of stats
// records and functions, and dumping them was a large part of the main thread's time, at the
// end, with nothing else to overlap it.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sprof {

// `json` as nlohmann's json.dump(indent, ' ', false, error_handler_t::replace) writes it, byte for
// byte (indent < 0: compact), appended to `out`. Faster: strings of printable ASCII (file paths,
// names: nearly all of them) are copied without nlohmann's UTF-8 decoder, and the text is appended
// to one string without a virtual call per piece. Other strings and the numbers are written by
// nlohmann's own code.
void append_json_text(std::string& out, const nlohmann::ordered_json& json, int indent);
// The same text and a line break, written to `out` a megabyte at a time as it is made.
void write_json_text(std::FILE* out, const nlohmann::ordered_json& json, int indent);

// The indent of sprof's JSON answers (print_answer), which prewritten parts are written with.
inline constexpr int kAnswerJsonIndent = 2;

// Writes what append_json_text writes for the document these calls describe, without building
// the document: for the largest parts of an answer (thousands of functions and stats records).
// Members come out in the order they are written.
class JsonTextWriter {
 public:
  JsonTextWriter(std::string& out, int indent) : out_(out), pretty_(indent >= 0), step_(pretty_ ? indent : 0) {}

  JsonTextWriter& begin_object() { return open('{', false); }
  JsonTextWriter& end_object() { return close('}'); }
  JsonTextWriter& begin_array() { return open('[', true); }
  JsonTextWriter& end_array() { return close(']'); }
  // The name of the object member whose value comes next.
  JsonTextWriter& key(std::string_view name);

  JsonTextWriter& string(std::string_view text);
  JsonTextWriter& integer(int64_t value);
  JsonTextWriter& real(double value);  // not finite: null, as nlohmann writes it
  JsonTextWriter& null();
  JsonTextWriter& boolean(bool value);
  JsonTextWriter& json(const nlohmann::ordered_json& value);  // a built value, in place

 private:
  struct Level {
    bool array;
    bool empty;
  };
  void separate();
  void before_value();
  JsonTextWriter& open(char bracket, bool array);
  JsonTextWriter& close(char bracket);
  void newline(size_t level);

  std::string& out_;
  bool pretty_;
  int step_;
  std::vector<Level> levels_;
};

// A value already written as text by a JsonTextWriter at `indent` (at level 0), to hold in a
// document: append_json_text (with the same indent) splices it in, re-indented for its depth.
// Only append_json_text can write a document holding one (nlohmann's dump would write bytes).
nlohmann::ordered_json prewritten_json(std::string text, int indent);

}  // namespace sprof
