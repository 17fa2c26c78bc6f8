// The commands that select one set of a node's cProfile records and print their aggregate, one
// table entry each: smdebug's fetch_profile_stats_by_step, _by_time, _between_modes,
// fetch_pre_step_zero_profile_stats and fetch_post_hook_close_profile_stats.

#include "command.hpp"
#include "query_args.hpp"
#include "stats_query.hpp"

namespace sprof::cli {
namespace {

// The flags of every selection command; each command adds and reads its own.
struct SelectionFlags {
  QueryOptions query;
  std::string start_step;
  std::string end_step;  // empty: same as start_step
  std::string mode = "train";
  std::string start_phase = "stepstart";
  std::string end_phase = "stepend";
  std::string start_time;
  std::string end_time;  // empty: no upper bound
  std::string start_mode;
  std::string end_mode;
};

using Selected = Result<query::StatsSelection>;
struct SelectionCommandDef {
  const char* name;
  const char* help;
  void (*add_flags)(CLI::App* sub, SelectionFlags& flags);
  Selected (*selection)(const SelectionFlags& flags);
};

void add_by_step_flags(CLI::App* sub, SelectionFlags& flags) {
  sub->add_option("--start-step,--step", flags.start_step,
                  "First step (an integer, or '*' for before step 0)")
      ->required();
  sub->add_option("--end-step", flags.end_step,
                  "Last step (an integer, or '*' for to the end; default: the start step)");
  sub->add_option("--mode", flags.mode, "Mode both ends of a stats interval must have")
      ->check(CLI::IsMember(profile_mode_names()))
      ->capture_default_str();
  sub->add_option("--start-phase", flags.start_phase,
                  "Phase of the start step; stepend/forwardpassend keep only stats that start "
                  "there")
      ->check(CLI::IsMember(step_phase_names()))
      ->capture_default_str();
  sub->add_option("--end-phase", flags.end_phase,
                  "Phase of the end step; stepstart keeps only stats that end there")
      ->check(CLI::IsMember(step_phase_names()))
      ->capture_default_str();
}

void add_by_time_flags(CLI::App* sub, SelectionFlags& flags) {
  sub->add_option("--start-time", flags.start_time,
                  "Interval start: microseconds since the epoch, or with a unit (us, ms, s)")
      ->required();
  sub->add_option("--end-time", flags.end_time, "Interval end, same units (default: no end)");
}

void add_between_modes_flags(CLI::App* sub, SelectionFlags& flags) {
  sub->add_option("--start-mode", flags.start_mode, "Mode at the start of the interval")
      ->check(CLI::IsMember(profile_mode_names()))
      ->required();
  sub->add_option("--end-mode", flags.end_mode, "Mode at the end of the interval")
      ->check(CLI::IsMember(profile_mode_names()))
      ->required();
}

void no_flags(CLI::App*, SelectionFlags&) {}

const SelectionCommandDef kSelectionCommands[] = {
    {"fetch-by-step", "Aggregate the cProfile stats of a step interval of one mode", add_by_step_flags,
     [](const SelectionFlags& f) -> Selected {
       return query::by_step_selection(f.start_step, f.end_step, f.mode, f.start_phase, f.end_phase);
     }},
    {"fetch-by-time", "Aggregate the cProfile stats whose start or end time lies in a time interval",
     add_by_time_flags, [](const SelectionFlags& f) -> Selected { return query::by_time_selection(f.start_time, f.end_time); }},
    {"between-modes", "Aggregate the cProfile stats that start in one mode and end in another",
     add_between_modes_flags,
     [](const SelectionFlags& f) -> Selected { return query::between_modes_selection(f.start_mode, f.end_mode); }},
    {"pre-step-zero", "Aggregate the cProfile stats from before the first step (start phase 'start')", no_flags,
     [](const SelectionFlags&) -> Selected { return query::pre_step_zero_selection(); }},
    {"post-hook-close", "Aggregate the cProfile stats that run to the end of the job (end phase 'end')",
     no_flags, [](const SelectionFlags&) -> Selected { return query::post_hook_close_selection(); }},
};

}  // namespace

void add_selection_commands(CLI::App& app, CommandList& commands) {
  for (const SelectionCommandDef& def : kSelectionCommands) {
    auto flags = std::make_shared<SelectionFlags>();
    CLI::App* sub = app.add_subcommand(def.name, def.help);
    add_query_options(sub, flags->query, true);
    def.add_flags(sub, *flags);
    commands.push_back(Command{sub, [flags, &def]() -> Result<int> {
                                 SPROF_TRY(query::StatsSelection selection, def.selection(*flags));
                                 return run_selection_command(def.name, flags->query, selection);
                               }});
  }
}

}  // namespace sprof::cli
