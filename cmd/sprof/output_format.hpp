#pragma once
// What every data-printing command shares: the --format/--json options, the JSON envelope
// (schema_version, sprof_version, stable key order) and the function table's order. Text tables
// and CSV lines are in text_table.hpp.

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sprof/result.hpp"
#include "sprof/stats_render.hpp"
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

// Columns of the terminal on stdout, 0 when stdout is not a terminal.
size_t terminal_width();

// A command's answer in each format: `json` appends its keys to the envelope ({"schema_version":
// 1, "sprof_version": "...", "command": ...}), `csv` and `table` make the text.
struct Answer {
  std::function<void(Json& document)> json;
  std::function<std::string()> csv;
  std::function<std::string()> table;
};
// Prints the format `format` resolves to on stdout (JSON indented, invalid UTF-8 replaced).
void print_answer(const FormatOptions& format, std::string_view command, const Answer& answer);

// --sort tottime|cumtime|ncalls|pcalls and -l/--limit N of the commands that print a pstats table.
void add_function_table_options(CLI::App* app, render::FunctionOrder& order);

}  // namespace sprof::cli
