// sprof pre-step-zero: smdebug's fetch_pre_step_zero_profile_stats.

#include "command.hpp"
#include "stats_query.hpp"

namespace sprof::cli {

void add_pre_step_zero(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<QueryOptions>();
  CLI::App* sub = app.add_subcommand(
      "pre-step-zero",
      "Aggregate the cProfile stats from before the first step (start phase 'start')");
  add_query_options(sub, *options, true);
  commands.push_back(Command{sub, [options] {
                               SelectionCommand spec;
                               spec.command = "pre-step-zero";
                               spec.query = Json::object();
                               spec.description = "start phase start (before step 0)";
                               spec.select = query::select_pre_step_zero;
                               return run_selection_command(*options, spec);
                             }});
}

}  // namespace sprof::cli
