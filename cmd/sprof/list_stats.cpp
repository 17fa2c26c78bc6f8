// sprof list-stats: one row per interval (stats directory), or per stats file with --files and in
// JSON and CSV, which carry smdebug's list_profile_stats records.

#include <fmt/format.h>

#include "command.hpp"
#include "sprof/stats_render.hpp"
#include "sprof/text_table.hpp"
#include "stats_query.hpp"

namespace sprof::cli {
namespace {

struct ListStatsOptions {
  ProfileOptions profile;
  std::string node;      // empty: every node
  std::string profiler;  // empty: every profiler
  bool files = false;    // the table lists each stats file
  FormatOptions format;
};

Result<int> run_list_stats(const ListStatsOptions& options) {
  SPROF_TRY(store::ProfileIndex index, load_profile(options.profile));
  std::vector<const store::StatsRecord*> rows;
  for (const store::StatsRecord& r : index.records) {
    if (!options.node.empty() && r.node_id != options.node) continue;
    if (!options.profiler.empty() && r.profiler != options.profiler) continue;
    rows.push_back(&r);
  }
  if (rows.empty() && !options.node.empty()) {
    return make_error(ErrorKind::bad_input, "node '{}' has no stats under {}; nodes: {}",
                      options.node, options.profile.profile_dir,
                      fmt::join(store::node_ids(index), ", "));
  }

  std::string text;
  switch (options.format.resolved()) {
    case OutputFormat::json: {
      Json doc = json_document("list-stats");
      doc["profile_dir"] = options.profile.profile_dir;
      doc["layout_level"] = store::to_string(index.level);
      Json stats = Json::array();
      for (const auto* r : rows) stats.push_back(render::record_json(*r));
      doc["stats"] = std::move(stats);
      doc["warnings"] = render::problems_json(index.problems);
      print_json(doc);
      return 0;
    }
    case OutputFormat::csv:
      text = render::csv_line(render::record_csv_header());
      for (const auto* r : rows) text += render::csv_line(render::record_csv_fields(*r));
      break;
    case OutputFormat::table: {
      render::TextStyle style{global_options().color_enabled, terminal_width()};
      text = options.files ? render::records_table(rows, style) : render::intervals_table(rows, style);
      break;
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void add_list_stats(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<ListStatsOptions>();
  CLI::App* sub = app.add_subcommand(
      "list-stats", "List the python profiling stats of a profile directory: one row per interval, or per file");
  add_profile_options(sub, options->profile);
  sub->add_option("--node", options->node, "Only this node's stats (default: every node)");
  sub->add_option("--profiler", options->profiler, "Only cprofile or pyinstrument stats")
      ->check(CLI::IsMember({store::kCprofileName, store::kPyinstrumentName}));
  sub->add_flag("--files", options->files,
                 "One table row per stats file (python_stats, .json, .html), as JSON and CSV list them");
  add_format_options(sub, options->format);
  commands.push_back(Command{sub, [options] { return run_list_stats(*options); }});
}

}  // namespace sprof::cli
