// sprof between-modes: smdebug's fetch_profile_stats_between_modes.

#include <fmt/format.h>

#include "command.hpp"
#include "query_args.hpp"
#include "stats_query.hpp"

namespace sprof::cli {
namespace {

struct BetweenModesOptions {
  QueryOptions query;
  std::string start_mode;
  std::string end_mode;
};

Result<int> run_between_modes(const BetweenModesOptions& options) {
  Mode start = mode_from_name(options.start_mode);
  Mode end = mode_from_name(options.end_mode);
  SelectionCommand spec;
  spec.command = "between-modes";
  spec.query["start_mode"] = options.start_mode;
  spec.query["end_mode"] = options.end_mode;
  spec.description =
      fmt::format("start mode {} and end mode {}", options.start_mode, options.end_mode);
  spec.select = [start, end](const query::Selection& records) {
    return query::select_between_modes(records, start, end);
  };
  return run_selection_command(options.query, spec);
}

}  // namespace

void add_between_modes(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<BetweenModesOptions>();
  CLI::App* sub = app.add_subcommand(
      "between-modes",
      "Aggregate the cProfile stats that start in one mode and end in another");
  add_query_options(sub, options->query, true);
  sub->add_option("--start-mode", options->start_mode, "Mode at the start of the interval")
      ->check(CLI::IsMember(profile_mode_names()))
      ->required();
  sub->add_option("--end-mode", options->end_mode, "Mode at the end of the interval")
      ->check(CLI::IsMember(profile_mode_names()))
      ->required();
  commands.push_back(Command{sub, [options] { return run_between_modes(*options); }});
}

}  // namespace sprof::cli
