// sprof nodes: the node ids that have python profiling stats (smdebug's
// list_available_node_ids), with their stats counts and time span.

#include <algorithm>
#include <map>

#include "command.hpp"
#include "sprof/stats_render.hpp"
#include "stats_query.hpp"

namespace sprof::cli {
namespace {

struct NodesOptions {
  ProfileOptions profile;
  FormatOptions format;
};

struct NodeSummary {
  size_t cprofile = 0;
  size_t pyinstrument = 0;
  double first_start_us = 0.0;
  double last_end_us = 0.0;
};

Result<int> run_nodes(const NodesOptions& options) {
  SPROF_TRY(store::ProfileIndex index, load_profile(options.profile));
  std::map<std::string, NodeSummary> nodes;  // sorted by node id, like smdebug
  for (const store::StatsRecord& r : index.records) {
    auto [it, inserted] = nodes.try_emplace(r.node_id);
    NodeSummary& s = it->second;
    if (inserted) {
      s.first_start_us = r.name.start.time_us;
      s.last_end_us = r.name.end.time_us;
    }
    (r.profiler == store::kCprofileName ? s.cprofile : s.pyinstrument)++;
    s.first_start_us = std::min(s.first_start_us, r.name.start.time_us);
    s.last_end_us = std::max(s.last_end_us, r.name.end.time_us);
  }

  std::string text;
  switch (options.format.resolved()) {
    case OutputFormat::json: {
      Json doc = json_document("nodes");
      doc["profile_dir"] = options.profile.profile_dir;
      Json list = Json::array();
      for (const auto& [id, s] : nodes) {
        Json j;
        j["node_id"] = id;
        j["cprofile_stats"] = s.cprofile;
        j["pyinstrument_stats"] = s.pyinstrument;
        j["first_start_time_since_epoch_in_micros"] = s.first_start_us;
        j["last_end_time_since_epoch_in_micros"] = s.last_end_us;
        list.push_back(std::move(j));
      }
      doc["nodes"] = std::move(list);
      doc["warnings"] = render::problems_json(index.problems);
      print_json(doc);
      return 0;
    }
    case OutputFormat::csv:
      text = render::csv_line({"node_id", "cprofile_stats", "pyinstrument_stats",
                       "first_start_time_since_epoch_in_micros",
                       "last_end_time_since_epoch_in_micros"});
      for (const auto& [id, s] : nodes) {
        text += render::csv_line({id, std::to_string(s.cprofile), std::to_string(s.pyinstrument),
                          float_text(s.first_start_us), float_text(s.last_end_us)});
      }
      break;
    case OutputFormat::table: {
      render::TextTable table({"NODE", "CPROFILE", "PYINSTRUMENT", "FIRST_START_US", "LAST_END_US"});
      for (const auto& [id, s] : nodes) {
        table.add_row({{id, ""},
                       {std::to_string(s.cprofile), ""},
                       {std::to_string(s.pyinstrument), ""},
                       {float_text(s.first_start_us), ""},
                       {float_text(s.last_end_us), ""}});
      }
      text = table.render(global_options().color_enabled, terminal_width());
      break;
    }
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
