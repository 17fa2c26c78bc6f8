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
  SPROF_TRY(store::ProfileIndex index, load_profile(options.profile));
  std::vector<query::NodeSummary> nodes = query::node_summaries(index);

  std::string text;
  switch (options.format.resolved()) {
    case OutputFormat::json: {
      Json doc = json_document("nodes");
      doc["profile_dir"] = options.profile.profile_dir;
      doc["nodes"] = render::nodes_json(nodes);
      doc["warnings"] = render::problems_json(index.problems);
      print_json(doc);
      return 0;
    }
    case OutputFormat::csv:
      text = render::nodes_csv(nodes);
      break;
    case OutputFormat::table:
      text = render::nodes_table(nodes, {global_options().color_enabled, terminal_width()});
      break;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
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
