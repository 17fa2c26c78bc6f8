#include "query_args.hpp"

#include <fmt/format.h>

namespace sprof::cli {

std::vector<std::string> profile_mode_names() {
  std::vector<std::string> names;
  for (Mode m : kAllModes) names.emplace_back(sprof::to_string(m));
  return names;
}

std::vector<std::string> step_phase_names() {
  std::vector<std::string> names;
  for (Phase p : kAllPhases) names.emplace_back(sprof::to_string(p));
  return names;
}

Mode mode_from_name(const std::string& name) {
  return parse_mode(name).value_or(Mode::train);
}

void add_run_selection_options(CLI::App* app, query::RunSelectionText& flags, const std::string& what) {
  app->add_option("--mode", flags.mode, fmt::format("Only {} inside steps of this mode (train, eval, predict, global)", what))
      ->check(CLI::IsMember(profile_mode_names()));
  app->add_option("--start-step", flags.start_step,
                  fmt::format("Only {} inside steps start..end, both included (work that starts inside them)", what));
  app->add_option("--end-step", flags.end_step, "Last step, included (as fetch-by-step's)");
  app->add_option("--start-time", flags.start_time,
                  fmt::format("Only {} from this time: epoch µs, or with a unit (1596585374.96s, ms)", what));
  app->add_option("--end-time", flags.end_time, fmt::format("Only {} before this time, as --start-time", what));
}

void add_time_view_flags(CLI::App* app, TimeViewFlags& flags, const std::string& what, bool old_spelling) {
  app->add_flag("--on-cpu", flags.on_cpu, fmt::format("{} of on-CPU time only (default: wall time, waits included)", what));
  app->add_flag("--all-threads", flags.all_threads, fmt::format("{} of every thread (default: the threads that run steps)", what));
  if (old_spelling) app->add_flag("--idle", flags.idle, "Old spelling of --all-threads");
}

}  // namespace sprof::cli
