#pragma once
// The --sort and --limit flags of the commands that print a pstats table (render/pstats_table).

#include <string>

#include <CLI/CLI.hpp>

#include "sprof/pstats_table.hpp"

namespace sprof::cli {

struct FunctionTableOptions {
  std::string sort = "cumtime";
  size_t limit = 0;  // 0 = every function
};

// Adds --sort tottime|cumtime|ncalls|pcalls and -l/--limit N.
void add_function_table_options(CLI::App* app, FunctionTableOptions& options);

}  // namespace sprof::cli
