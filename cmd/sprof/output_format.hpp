#pragma once
// What every data-printing command shares: the --format/--json options, the JSON envelope
// (schema_version, sprof_version, stable key order) and float text. Text tables and CSV lines
// are in text_table.hpp.

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sprof/result.hpp"
#include "sprof/text_table.hpp"

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

// Adds -f/--format table|json|csv (plus `extra` formats the command handles itself, which
// resolved() reports as table) and --json (short for --format json).
void add_format_options(CLI::App* app, FormatOptions& options, const std::vector<std::string>& extra = {});

// {"schema_version": 1, "sprof_version": "...", "command": command}; callers append keys.
// Columns of the terminal on stdout, 0 when stdout is not a terminal.
size_t terminal_width();

Json json_document(std::string_view command);
// Writes the document to stdout, indented, with a final newline.
void print_json(const Json& document);

// Python repr() of a float, so CSV/table numbers read back to the same double.
std::string float_text(double value);

}  // namespace sprof::cli
