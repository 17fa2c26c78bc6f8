#pragma once
// Text inside HTML, SVG or XML (element content and quoted attribute values), and text for a
// terminal.

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

// Names the profiled program chose (functions, files, threads) as one line of terminal text:
// C0 controls (ESC, BEL, NUL, CR, newline, tab), DEL and C1 controls become '?', so that a name
// can neither move the cursor, retitle the terminal, clear the screen nor split a table row.
std::string terminal_safe(std::string_view text);

}  // namespace sprof
