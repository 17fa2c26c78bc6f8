#pragma once
// Plain-text tables and CSV for every report. Columns are aligned on display width (UTF-8 aware);
// the last column is never padded. Cells may carry an ANSI colour that does not count toward width.

#include <string>
#include <string_view>
#include <vector>

namespace sprof::render {

struct TableCell {
  std::string text;
  std::string color;  // ANSI SGR code such as "31" (red), "" for none
};

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers);
  void add_row(std::vector<TableCell> cells);
  // Renders with two spaces between columns. `max_width` > 0 truncates the last column with "…" so
  // each line fits (a terminal); colours only when `color`.
  std::string render(bool color, size_t max_width = 0) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<TableCell>> rows_;
};

// RFC 4180 field: quoted when it holds a comma, quote or line break.
std::string csv_field(std::string_view text);
std::string csv_line(const std::vector<std::string>& fields);

// Number of terminal columns a UTF-8 string takes (one per code point).
size_t display_width(std::string_view text);

}  // namespace sprof::render
