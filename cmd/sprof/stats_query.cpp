#include "stats_query.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "sprof/pstats.hpp"
#include "sprof/sample_report.hpp"
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

Result<store::ProfileIndex> load_profile(const ProfileOptions& options) {
  return query::load_stats_index(options.profile_dir, options.strict);
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
  return query::open_stats_source(options.profile.profile_dir, source);
}

void append_source_json(Json& into, const query::StatsSource& source) {
  into["source"] = std::string(query::to_string(source.kind()));
  if (auto timer = source.timer()) into["python_timer"] = std::string(intervals::to_string(*timer));
}

Status write_aggregate(const std::string& path, const query::Aggregate& aggregate) {
  if (aggregate.table.empty()) {
    return make_error(ErrorKind::bad_input,
                      "nothing selected, so no pstats file written to {} (pstats cannot load an "
                      "empty stats file)",
                      path);
  }
  SPROF_TRY_STATUS(store::write_pstats(path, aggregate.table));
  spdlog::info("Wrote {} ({} functions from {} stats files)", path, aggregate.table.size(),
               aggregate.used.size());
  return {};
}

// -f collapsed|speedscope|flamegraph: the stacks of the selected intervals' samples.
Result<int> print_selection_stacks(const query::StatsSource& source, const query::Selection& selection,
                                   const QueryOptions& options, const std::string& description) {
  const query::SampledProfile& sampled = *source.sampled();
  const intervals::PythonTimer timer = *source.timer();
  query::SampleFilter filter = query::selection_filter(sampled, selection, timer);
  std::string text;
  const std::string title = fmt::format("{}: {} ({})", options.profile.profile_dir, description, intervals::to_string(timer));
  uint64_t samples = report::write_stacks(*report::parse_stack_format(options.format.format), sampled.samples, filter,
                                          title, text);
  if (samples == 0) spdlog::warn("no samples in the selected intervals (timer {})", intervals::to_string(timer));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

Result<int> run_selection_command(const QueryOptions& options, const SelectionCommand& spec) {
  const bool stacks = report::parse_stack_format(options.format.format).has_value();
  SPROF_TRY(std::unique_ptr<query::StatsSource> source, open_query_source(options));
  if (stacks && source->sampled() == nullptr) {
    return make_error(ErrorKind::usage, "-f {} needs a sprof profile root with raw samples; {} is read from its "
                      "stats files", options.format.format, options.profile.profile_dir);
  }
  const store::ProfileIndex& index = source->index();
  SPROF_TRY(query::NodeSelection node, query::cprofile_records_of_node(index, options.node));
  query::Selection selection = spec.select(node.records);
  if (selection.empty()) {
    spdlog::warn("no {} of node {} match: {}", source->what(), node.node_id, spec.description);
    // Old-format dirs carry no mode: they read as `global`, which the default mode misses.
    bool has_old = false;
    for (const auto* r : node.records) has_old |= r->name.format == store::NameFormat::old;
    if (has_old) {
      spdlog::warn("{} holds old-format stats dirs, which sprof reads as mode global "
                   "(try --mode global)",
                   options.profile.profile_dir);
    }
  }
  SPROF_TRY(query::Aggregate aggregate, source->aggregate(selection));

  if (!options.output.empty()) {
    SPROF_TRY_STATUS(write_aggregate(options.output, aggregate));
    if (!options.format.given()) return 0;
  }
  if (stacks) return print_selection_stacks(*source, selection, options, spec.description);

  switch (options.format.resolved()) {
    case OutputFormat::json: {
      Json doc = json_document(spec.command);
      doc["profile_dir"] = options.profile.profile_dir;
      doc["node_id"] = node.node_id;
      doc["query"] = spec.query;
      append_source_json(doc, *source);
      doc["warnings"] = render::problems_json(index.problems);
      render::append_aggregate_json(doc, aggregate, options.table);
      print_json(doc);
      break;
    }
    case OutputFormat::csv: {
      std::string text = render::aggregate_csv(aggregate, options.table, {}, {}, true);
      std::fwrite(text.data(), 1, text.size(), stdout);
      break;
    }
    case OutputFormat::table: {
      std::string text = fmt::format("Node {}: {} of {} {} match {}{}\n", node.node_id, aggregate.used.size(),
                                     node.records.size(), source->what(), spec.description,
                                     source->timer() ? fmt::format(" (from the raw samples, {})",
                                                                   intervals::to_string(*source->timer()))
                                                     : "");
      if (!aggregate.used.empty()) {
        text += render::aggregate_time_note(aggregate);
        text += "\n" + render::aggregate_table(aggregate, options.table);
      }
      std::fwrite(text.data(), 1, text.size(), stdout);
      break;
    }
  }
  return 0;
}

}  // namespace sprof::cli
