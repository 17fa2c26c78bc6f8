// sprof by-phase: smdebug's fetch_profile_stats_by_training_phase (--training-phase) and
// fetch_profile_stats_by_job_phase (--job-phase).

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "sprof/stats_render.hpp"
#include "stats_query.hpp"

namespace sprof::cli {
namespace {

struct ByPhaseOptions {
  QueryOptions query;
  bool training_phase = false;
  bool job_phase = false;
  std::vector<std::string> phases;  // --phase filter
  std::string compat = "sprof";
};

Result<int> run_by_phase(const ByPhaseOptions& options) {
  if (options.training_phase == options.job_phase) {
    return make_error(ErrorKind::usage, "by-phase needs exactly one of --training-phase and "
                                        "--job-phase");
  }
  SPROF_TRY(auto source, open_query_source(options.query));
  const store::ProfileIndex& index = source->index();
  SPROF_TRY(query::NodeSelection node,
            query::cprofile_records_of_node(index, options.query.node));
  std::vector<query::TrainingPhase> training = query::training_phases(node.records);
  SPROF_TRY(std::vector<query::PhaseAggregate> results,
            query::aggregate_phases(*source, training,
                                    options.training_phase ? query::PhaseGrouping::training_phase
                                                           : query::PhaseGrouping::job_phase,
                                    options.compat == "smdebug" ? query::Compat::smdebug : query::Compat::sprof,
                                    options.phases));
  if (!options.phases.empty() && results.empty()) {
    return make_error(ErrorKind::usage, "--phase {}: no such phase in {} (node {})",
                      fmt::join(options.phases, ","), options.query.profile.profile_dir,
                      node.node_id);
  }

  if (!options.query.output.empty()) {
    if (results.size() != 1) {
      return make_error(ErrorKind::usage,
                        "-o writes one pstats file: select one of the {} phases with --phase",
                        results.size());
    }
    SPROF_TRY_STATUS(write_aggregate(options.query.output, results.front().aggregate));
    if (!options.query.format.given()) return 0;
  }

  std::string text;
  switch (options.query.format.resolved()) {
    case OutputFormat::json: {
      Json doc = json_document("by-phase");
      doc["profile_dir"] = options.query.profile.profile_dir;
      doc["node_id"] = node.node_id;
      doc["query"]["group_by"] = options.training_phase ? "training_phase" : "job_phase";
      if (options.job_phase) doc["query"]["compat"] = options.compat;
      append_source_json(doc, *source);
      doc["warnings"] = render::problems_json(index.problems);
      Json phases = Json::array();
      for (const query::PhaseAggregate& r : results) {
        Json j;
        j["name"] = r.name;
        if (r.training != nullptr) {
          j["start_mode"] = sprof::to_string(r.training->start_mode);
          j["end_mode"] = sprof::to_string(r.training->end_mode);
        }
        j["parts"] = r.parts;
        render::append_aggregate_json(j, r.aggregate, options.query.table);
        phases.push_back(std::move(j));
      }
      doc["phases"] = std::move(phases);
      print_json(doc);
      return 0;
    }
    case OutputFormat::csv:
      for (size_t i = 0; i < results.size(); ++i) {
        text += render::aggregate_csv(results[i].aggregate, options.query.table, {"phase"}, {results[i].name},
                              i == 0);
      }
      if (results.empty()) text = render::csv_line({"phase"});
      break;
    case OutputFormat::table:
      text = fmt::format("Node {}: {} {}\n", node.node_id, results.size(),
                         options.training_phase ? "training phases" : "job phases");
      for (const query::PhaseAggregate& r : results) {
        text += fmt::format("\n=== {}", r.name);
        if (options.job_phase) {
          text += fmt::format(" ({})", r.parts.empty() ? "no stats" : fmt::format("{}", fmt::join(r.parts, ", ")));
        }
        text += fmt::format(": {} {}\n", r.aggregate.used.size(), source->sampled() ? "intervals" : "stats files");
        if (!r.aggregate.used.empty()) {
          text += render::aggregate_time_note(r.aggregate);
          text += "\n" + render::aggregate_table(r.aggregate, options.query.table);
        }
      }
      break;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void add_by_phase(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<ByPhaseOptions>();
  CLI::App* sub = app.add_subcommand(
      "by-phase", "Aggregate the cProfile stats per training phase or per job phase");
  add_query_options(sub, options->query);
  auto* training = sub->add_flag("--training-phase", options->training_phase,
                                 "One aggregate per (start mode, end mode) pair present");
  auto* job = sub->add_flag("--job-phase", options->job_phase,
                            "Aggregates for initialization, training_loop and finalization");
  training->excludes(job);
  sub->add_option("--phase", options->phases,
                  "Only these phases (names as printed, e.g. train-eval or training_loop); "
                  "repeatable or comma-separated")
      ->delimiter(',');
  sub->add_option("--compat", options->compat,
                  "sprof: initialization/finalization add every mode pair they hold; smdebug: "
                  "keep only the last pair, as smdebug does")
      ->check(CLI::IsMember({"sprof", "smdebug"}))
      ->capture_default_str();
  commands.push_back(Command{sub, [options] { return run_by_phase(*options); }});
}

}  // namespace sprof::cli
