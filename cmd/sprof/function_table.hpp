#pragma once
// The --sort and --limit flags of the commands that print a pstats table (render/stats_render).

#include <string>

#include <CLI/CLI.hpp>

#include "sprof/stats_render.hpp"

namespace sprof::cli {

using FunctionTableOptions = render::FunctionOrder;

// Adds --sort tottime|cumtime|ncalls|pcalls and -l/--limit N.
void add_function_table_options(CLI::App* app, FunctionTableOptions& options);

}  // namespace sprof::cli
