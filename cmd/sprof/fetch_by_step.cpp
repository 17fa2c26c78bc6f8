// sprof fetch-by-step: smdebug's fetch_profile_stats_by_step.

#include <cmath>

#include <fmt/format.h>

#include "command.hpp"
#include "query_args.hpp"
#include "stats_query.hpp"

namespace sprof::cli {
namespace {

struct FetchByStepOptions {
  QueryOptions query;
  std::string start_step;
  std::string end_step;  // empty: same as start_step
  std::string mode = "train";
  std::string start_phase = "stepstart";
  std::string end_phase = "stepend";
};

std::string step_text(double step) {
  if (std::isinf(step)) return "*";
  return fmt::format("{}", static_cast<int64_t>(step));
}

Result<int> run_fetch_by_step(const FetchByStepOptions& options) {
  query::StepQuery q;
  SPROF_TRY(q.start_step, parse_step_arg("--start-step", options.start_step, false));
  std::string end = options.end_step.empty() ? options.start_step : options.end_step;
  SPROF_TRY(q.end_step, parse_step_arg("--end-step", end, true));
  q.mode = mode_from_name(options.mode);
  q.start_phase = phase_from_name(options.start_phase);
  q.end_phase = phase_from_name(options.end_phase);

  SelectionCommand spec;
  spec.command = "fetch-by-step";
  spec.query["start_step"] = static_cast<int64_t>(q.start_step);
  spec.query["end_step"] =
      std::isinf(q.end_step) ? Json(nullptr) : Json(static_cast<int64_t>(q.end_step));
  spec.query["mode"] = options.mode;
  spec.query["start_phase"] = options.start_phase;
  spec.query["end_phase"] = options.end_phase;
  spec.description = fmt::format("{} steps {} ({}) to {} ({})", options.mode,
                                 step_text(q.start_step), options.start_phase,
                                 step_text(q.end_step), options.end_phase);
  spec.select = [q](const query::Selection& records) { return query::select_by_step(records, q); };
  return run_selection_command(options.query, spec);
}

}  // namespace

void add_fetch_by_step(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<FetchByStepOptions>();
  CLI::App* sub = app.add_subcommand(
      "fetch-by-step", "Aggregate the cProfile stats of a step interval of one mode");
  add_query_options(sub, options->query, true);
  sub->add_option("--start-step,--step", options->start_step,
                  "First step (an integer, or '*' for before step 0)")
      ->required();
  sub->add_option("--end-step", options->end_step,
                  "Last step (an integer, or '*' for to the end; default: the start step)");
  sub->add_option("--mode", options->mode, "Mode both ends of a stats interval must have")
      ->check(CLI::IsMember(profile_mode_names()))
      ->capture_default_str();
  sub->add_option("--start-phase", options->start_phase,
                  "Phase of the start step; stepend/forwardpassend keep only stats that start "
                  "there")
      ->check(CLI::IsMember(step_phase_names()))
      ->capture_default_str();
  sub->add_option("--end-phase", options->end_phase,
                  "Phase of the end step; stepstart keeps only stats that end there")
      ->check(CLI::IsMember(step_phase_names()))
      ->capture_default_str();
  commands.push_back(Command{sub, [options] { return run_fetch_by_step(*options); }});
}

}  // namespace sprof::cli
