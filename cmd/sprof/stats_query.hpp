#pragma once
// Shared by the stats-directory commands (list-stats, nodes, fetch-*, between-modes,
// pre-step-zero, post-hook-close, by-phase): the PROFILE_DIR argument, --strict, --node,
// --source, the output choice; the shapes themselves are in render/stats_render.

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "command.hpp"
#include "output_format.hpp"
#include "sprof/profile.hpp"
#include "sprof/query.hpp"
#include "sprof/stats_selection.hpp"
#include "sprof/stats_source.hpp"

namespace sprof::cli {

struct ProfileOptions {
  ProfileArgument profile_dir;
  bool strict = false;
};

// PROFILE_DIR (positional, required) and --strict.
void add_profile_options(CLI::App* app, ProfileOptions& options);

// Options of every command that aggregates cProfile stats.
struct QueryOptions {
  ProfileOptions profile;
  std::string node{query::kAnyNode};
  render::FunctionOrder table;
  FormatOptions format;
  std::string output;  // -o FILE.pstats
  std::string source = "auto";  // auto | samples | stats
  std::string python_timer;     // empty: the timer record used, else total_time
  std::vector<std::string> threads;  // --thread: only these threads' samples
};
// stack_formats: the command also prints -f collapsed|speedscope|flamegraph (run_selection_command
// does).
void add_query_options(CLI::App* app, QueryOptions& options, bool stack_formats = false);

// The source --source and --python-timer choose (query::open_stats_source).
Result<std::unique_ptr<query::StatsSource>> open_query_source(const QueryOptions& options);

// A command that selects one set of a node's cProfile records and prints their aggregate.
Result<int> run_selection_command(const std::string& command, const QueryOptions& options,
                                  const query::StatsSelection& selection);

}  // namespace sprof::cli
