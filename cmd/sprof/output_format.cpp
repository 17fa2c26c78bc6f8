#include "output_format.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sprof/stats_dir.hpp"
#include "sprof/version.hpp"

namespace sprof::cli {

OutputFormat FormatOptions::resolved() const {
  if (json) return OutputFormat::json;
  if (format == "json") return OutputFormat::json;
  if (format == "csv") return OutputFormat::csv;
  return OutputFormat::table;
}

bool FormatOptions::given() const {
  return (format_option != nullptr && format_option->count() > 0) ||
         (json_option != nullptr && json_option->count() > 0);
}

void add_format_options(CLI::App* app, FormatOptions& options) {
  options.format_option =
      app->add_option("-f,--format", options.format, "Output format: table, json or csv")
          ->check(CLI::IsMember({"table", "json", "csv"}))
          ->capture_default_str();
  options.json_option = app->add_flag("--json", options.json, "Short for --format json");
  options.json_option->excludes(options.format_option);
}

Json json_document(std::string_view command) {
  Json doc;
  doc["schema_version"] = kJsonSchemaVersion;
  doc["sprof_version"] = kVersion;
  doc["command"] = command;
  return doc;
}

void print_json(const Json& document) {
  // Invalid UTF-8 in file names must not abort the dump: replace it.
  std::string text = document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    const std::string& f = fields[i];
    if (f.find_first_of(",\"\r\n") == std::string::npos) {
      line += f;
      continue;
    }
    line += '"';
    for (char c : f) {
      if (c == '"') line += '"';
      line += c;
    }
    line += '"';
  }
  line += '\n';
  return line;
}

std::string float_text(double value) { return store::python_float_repr(value); }

void TextTable::add_column(std::string header, Align align) {
  headers_.push_back(std::move(header));
  aligns_.push_back(align);
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = headers_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      bool last = c + 1 == cells.size();
      if (c > 0) line += "  ";
      if (aligns_[c] == Align::right) {
        line += fmt::format("{:>{}}", cells[c], widths[c]);
      } else if (last) {
        line += cells[c];  // no trailing blanks
      } else {
        line += fmt::format("{:<{}}", cells[c], widths[c]);
      }
    }
    out += line;
    out += '\n';
  };
  emit(headers_);
  for (const auto& row : rows_) emit(row);
  return out;
}

}  // namespace sprof::cli
