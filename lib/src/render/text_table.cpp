#include "sprof/text_table.hpp"

#include "sprof/markup.hpp"

#include <algorithm>

namespace sprof::render {

size_t display_width(std::string_view text) {
  size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;  // count lead bytes only
  }
  return width;
}

namespace {

// The longest prefix of `text` (whole code points) that fits `width` columns.
std::string truncate(std::string_view text, size_t width) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return "";
  size_t columns = 0, i = 0;
  for (; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) {
      if (columns + 1 == width) break;  // keep one column for the ellipsis
      ++columns;
    }
  }
  return std::string(text.substr(0, i)) + "\xE2\x80\xA6";
}

}  // namespace

TextTable::TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void TextTable::add_row(std::vector<TableCell> cells) {
  cells.resize(headers_.size());
  for (TableCell& cell : cells) cell.text = terminal_safe(cell.text);  // names from the program
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(bool color, size_t max_width) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = display_width(headers_[c]);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c].text));
  }
  size_t prefix = 0;
  for (size_t c = 0; c + 1 < widths.size(); ++c) prefix += widths[c] + 2;
  std::string out;
  auto emit = [&](const std::vector<TableCell>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      bool last = c + 1 == cells.size();
      std::string text = cells[c].text;
      if (last && max_width > prefix) text = truncate(text, max_width - prefix);
      bool colored = color && !cells[c].color.empty();
      if (colored) line += "\x1b[" + cells[c].color + "m";
      line += text;
      if (colored) line += "\x1b[0m";
      if (!last) line += std::string(widths[c] - display_width(text) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  std::vector<TableCell> header_cells;
  for (const auto& h : headers_) header_cells.push_back(TableCell{h, "1"});
  emit(header_cells);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_field(fields[i]);
  }
  return line + "\n";
}

}  // namespace sprof::render
