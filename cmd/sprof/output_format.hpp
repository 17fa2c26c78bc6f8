#pragma once
// What every data-printing command shares: the --format/--json options, the JSON envelope
// (schema_version, sprof_version, stable key order), CSV quoting, and aligned text tables.

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sprof/result.hpp"

namespace sprof::cli {

using Json = nlohmann::ordered_json;

// Bumped when a key changes meaning or disappears (new keys do not bump it).
inline constexpr int kJsonSchemaVersion = 1;

enum class OutputFormat { table, json, csv };

struct FormatOptions {
  std::string format = "table";
  bool json = false;
  CLI::Option* format_option = nullptr;
  CLI::Option* json_option = nullptr;

  OutputFormat resolved() const;
  // True when the user asked for a format (so -o alone does not also print a table).
  bool given() const;
};

// Adds -f/--format table|json|csv and --json (short for --format json).
void add_format_options(CLI::App* app, FormatOptions& options);

// {"schema_version": 1, "sprof_version": "...", "command": command}; callers append keys.
Json json_document(std::string_view command);
// Writes the document to stdout, indented, with a final newline.
void print_json(const Json& document);

// One CSV line (RFC 4180 quoting), newline-terminated.
std::string csv_line(const std::vector<std::string>& fields);

// Python repr() of a float, so CSV/table numbers read back to the same double.
std::string float_text(double value);

// A plain text table: columns padded to their widest cell, two spaces apart, headers first.
class TextTable {
 public:
  enum class Align { left, right };
  void add_column(std::string header, Align align = Align::left);
  void add_row(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace sprof::cli
