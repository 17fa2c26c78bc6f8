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
  SPROF_TRY(store::ProfileIndex index,
            query::load_stats_index(options.profile.profile_dir.where, options.profile.strict));
  SPROF_TRY(query::Selection rows,
            query::listed_records(index, options.node, options.profiler, options.profile.profile_dir.text));
  print_answer(options.format, "list-stats",
               {[&](Json& doc) { render::append_list_stats_json(doc, options.profile.profile_dir.text, index, rows); },
                [&] { return render::records_csv(rows); },
                [&] {
                  render::TextStyle style{global_options().color_enabled, terminal_width()};
                  return options.files ? render::records_table(rows, style) : render::intervals_table(rows, style);
                }});
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
