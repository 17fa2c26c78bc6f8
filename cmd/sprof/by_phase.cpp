// sprof by-phase: smdebug's fetch_profile_stats_by_training_phase (--training-phase) and
// fetch_profile_stats_by_job_phase (--job-phase).

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
  SPROF_TRY(query::NodePhases node,
            query::aggregate_node_phases(
                *source, options.query.node,
                options.training_phase ? query::PhaseGrouping::training_phase : query::PhaseGrouping::job_phase,
                options.compat == "smdebug" ? query::Compat::smdebug : query::Compat::sprof, options.phases,
                options.query.profile.profile_dir.text));
  const std::vector<query::PhaseAggregate>& results = node.phases;
  if (!options.query.output.empty()) {
    if (results.size() != 1) {
      return make_error(ErrorKind::usage,
                        "-o writes one pstats file: select one of the {} phases with --phase",
                        results.size());
    }
    SPROF_TRY_STATUS(query::write_aggregate_pstats(options.query.output, results.front().aggregate));
    if (!options.query.format.given()) return 0;
  }

  render::PhasesAnswer answer{options.query.profile.profile_dir.text, node.node_id, options.training_phase, options.compat,
                              &results};
  print_answer(options.query.format, "by-phase",
               {[&](Json& doc) { render::append_phases_json(doc, answer, *source, options.query.table); },
                [&] { return render::phases_csv(answer, options.query.table); },
                [&] { return render::phases_text(answer, *source, options.query.table); }});
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
