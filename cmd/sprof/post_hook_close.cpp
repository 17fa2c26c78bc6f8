// sprof post-hook-close: smdebug's fetch_post_hook_close_profile_stats.

#include "command.hpp"
#include "stats_query.hpp"

namespace sprof::cli {

void add_post_hook_close(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<QueryOptions>();
  CLI::App* sub = app.add_subcommand(
      "post-hook-close",
      "Aggregate the cProfile stats that run to the end of the job (end phase 'end')");
  add_query_options(sub, *options, true);
  commands.push_back(Command{sub, [options] {
                               SelectionCommand spec;
                               spec.command = "post-hook-close";
                               spec.query = Json::object();
                               spec.description = "end phase end (to the end of the job)";
                               spec.select = query::select_post_hook_close;
                               return run_selection_command(*options, spec);
                             }});
}

}  // namespace sprof::cli
