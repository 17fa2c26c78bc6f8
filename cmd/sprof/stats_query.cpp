#include "stats_query.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "sprof/profile_export.hpp"
#include "sprof/stats_render.hpp"

namespace sprof::cli {

void add_profile_options(CLI::App* app, ProfileOptions& options) {
  add_profile_argument(app, "PROFILE_DIR", options.profile_dir,
                  "Profile directory: the profile root, or framework/<framework>/<profiler>")
      ->required();
  app->add_flag("--strict", options.strict,
                "Fail (exit 2) on any malformed name, misplaced or unreadable entry instead of "
                "skipping it with a warning");
}

void add_query_options(CLI::App* app, QueryOptions& options, bool stack_formats) {
  add_profile_options(app, options.profile);
  app->add_option("--node", options.node,
                  "Node id to query; 'any' is the node of the earliest cProfile stats")
      ->capture_default_str();
  add_function_table_options(app, options.table);
  std::vector<std::string> extra;
  if (stack_formats) extra = {"collapsed", "speedscope", "flamegraph"};
  add_format_options(app, options.format, extra);
  app->add_option("-o,--output", options.output,
                  "Also write the aggregated stats as a pstats file (python3 -m pstats FILE); "
                  "stdout then stays empty unless --format/--json is given");
  app->add_option("--source", options.source,
                  "Answer a sprof profile root from its raw samples (every interval of the step "
                  "timeline) or from its stats files, as smdebug does; auto: samples when "
                  "PROFILE_DIR holds sprof.json and samples/")
      ->check(CLI::IsMember({"auto", "samples", "stats"}))
      ->capture_default_str();
  app->add_option("--python-timer", options.python_timer,
                  "Samples an answer from samples counts: total_time (all), cpu_time (on-CPU), "
                  "off_cpu_time (idle); default: the timer record wrote the stats with")
      ->check(CLI::IsMember({"total_time", "cpu_time", "off_cpu_time"}));
  app->add_option("--thread", options.threads,
                  "Samples answers: only this thread's samples, by threading name (MainThread) or "
                  "kernel TID; repeatable. Without it the times add up every thread's")
      ->delimiter(',');
}

Result<std::unique_ptr<query::StatsSource>> open_query_source(const QueryOptions& options) {
  query::SourceOptions source;
  if (options.source != "auto") source.kind = query::parse_source_kind(options.source);
  if (!options.python_timer.empty()) source.timer = intervals::parse_python_timer(options.python_timer);
  source.strict = options.profile.strict;
  source.threads = options.threads;
  return query::open_stats_source(options.profile.profile_dir.where, source);
}

Result<int> run_selection_command(const std::string& command, const QueryOptions& options,
                                  const query::StatsSelection& selection) {
  const bool stacks = report::parse_stack_format(options.format.format).has_value();
  SPROF_TRY(std::unique_ptr<query::StatsSource> source, open_query_source(options));
  if (stacks && source->sampled() == nullptr) {
    return make_error(ErrorKind::usage, "-f {} needs a sprof profile root with raw samples; {} is read from its "
                      "stats files", options.format.format, options.profile.profile_dir.text);
  }
  SPROF_TRY(query::SelectedStats selected,
            query::select_stats(*source, options.node, selection, options.profile.profile_dir.text));
  if (!options.output.empty()) {
    SPROF_TRY_STATUS(query::write_aggregate_pstats(options.output, selected.aggregate));
    if (!options.format.given()) return 0;
  }
  if (stacks) {
    report::ExportedProfile out = report::export_selection_stacks(
        *source, selected.selection, *report::parse_stack_format(options.format.format),
        fmt::format("{}: {}", options.profile.profile_dir.text, selection.description));
    std::fwrite(out.text.data(), 1, out.text.size(), stdout);
    return 0;
  }
  const render::FunctionOrder& order = options.table;
  print_answer(options.format, command,
               {[&](Json& doc) {
                  render::append_selection_json(doc, options.profile.profile_dir.text, *source, selection, selected, order);
                },
                [&] { return render::aggregate_csv(selected.aggregate, order, {}, {}, true); },
                [&] { return render::selection_text(*source, selection, selected, order); }});
  return 0;
}

}  // namespace sprof::cli
