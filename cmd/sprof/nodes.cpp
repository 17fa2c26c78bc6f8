// sprof nodes: the node ids that have python profiling stats (smdebug's
// list_available_node_ids), with their stats counts and time span.

#include "command.hpp"
#include "sprof/stats_render.hpp"
#include "stats_query.hpp"

namespace sprof::cli {
namespace {

struct NodesOptions {
  ProfileOptions profile;
  FormatOptions format;
};

Result<int> run_nodes(const NodesOptions& options) {
  SPROF_TRY(store::ProfileIndex index,
            query::load_stats_index(options.profile.profile_dir.where, options.profile.strict));
  std::vector<query::NodeSummary> nodes = query::node_summaries(index);

  print_answer(options.format, "nodes",
               {[&](Json& doc) {
                  doc["profile_dir"] = options.profile.profile_dir.text;
                  doc["nodes"] = render::nodes_json(nodes);
                  doc["warnings"] = render::problems_json(index.problems);
                },
                [&] { return render::nodes_csv(nodes); },
                [&] { return render::nodes_table(nodes, {global_options().color_enabled, terminal_width()}); }});
  return 0;
}

}  // namespace

void add_nodes(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<NodesOptions>();
  CLI::App* sub =
      app.add_subcommand("nodes", "List the node ids that have python profiling stats");
  add_profile_options(sub, options->profile);
  add_format_options(sub, options->format);
  commands.push_back(Command{sub, [options] { return run_nodes(*options); }});
}

}  // namespace sprof::cli
