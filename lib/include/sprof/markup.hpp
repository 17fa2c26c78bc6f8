#pragma once
// Text inside HTML, SVG or XML (element content and quoted attribute values).

#include <string>
#include <string_view>

namespace sprof {

// Appends `text` with & < > " ' as entities; control characters other than tab (which XML 1.0
// forbids even as references) become spaces.
void append_markup_escaped(std::string& out, std::string_view text);

inline std::string markup_escaped(std::string_view text) {
  std::string out;
  append_markup_escaped(out, text);
  return out;
}

}  // namespace sprof
