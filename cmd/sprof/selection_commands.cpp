// The commands that select one set of a node's cProfile records and print their aggregate, one
// table entry each: smdebug's fetch_profile_stats_by_step, _by_time, _between_modes,
// fetch_pre_step_zero_profile_stats and fetch_post_hook_close_profile_stats.

#include <cmath>
#include <limits>

#include <fmt/format.h>

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

struct SelectionCommandDef {
  const char* name;
  const char* help;
  void (*add_flags)(CLI::App* sub, SelectionFlags& flags);
  Result<SelectionCommand> (*spec)(const SelectionFlags& flags);
};

std::string step_text(double step) {
  if (std::isinf(step)) return "*";
  return fmt::format("{}", static_cast<int64_t>(step));
}

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

Result<SelectionCommand> by_step_spec(const SelectionFlags& flags) {
  query::StepQuery q;
  SPROF_TRY(q.start_step, parse_step_arg("--start-step", flags.start_step, false));
  std::string end = flags.end_step.empty() ? flags.start_step : flags.end_step;
  SPROF_TRY(q.end_step, parse_step_arg("--end-step", end, true));
  q.mode = mode_from_name(flags.mode);
  q.start_phase = phase_from_name(flags.start_phase);
  q.end_phase = phase_from_name(flags.end_phase);

  SelectionCommand spec;
  spec.query["start_step"] = static_cast<int64_t>(q.start_step);
  spec.query["end_step"] = std::isinf(q.end_step) ? Json(nullptr) : Json(static_cast<int64_t>(q.end_step));
  spec.query["mode"] = flags.mode;
  spec.query["start_phase"] = flags.start_phase;
  spec.query["end_phase"] = flags.end_phase;
  spec.description = fmt::format("{} steps {} ({}) to {} ({})", flags.mode, step_text(q.start_step),
                                 flags.start_phase, step_text(q.end_step), flags.end_phase);
  spec.select = [q](const query::Selection& records) { return query::select_by_step(records, q); };
  return spec;
}

void add_by_time_flags(CLI::App* sub, SelectionFlags& flags) {
  sub->add_option("--start-time", flags.start_time,
                  "Interval start: microseconds since the epoch, or with a unit (us, ms, s)")
      ->required();
  sub->add_option("--end-time", flags.end_time, "Interval end, same units (default: no end)");
}

Result<SelectionCommand> by_time_spec(const SelectionFlags& flags) {
  SPROF_TRY(double start_us, parse_time_arg("--start-time", flags.start_time));
  double end_us = std::numeric_limits<double>::infinity();
  if (!flags.end_time.empty()) {
    SPROF_TRY(end_us, parse_time_arg("--end-time", flags.end_time));
  }
  if (end_us < start_us) {
    return make_error(ErrorKind::usage, "--end-time {} is before --start-time {}", flags.end_time,
                      flags.start_time);
  }
  SelectionCommand spec;
  spec.query["start_time_since_epoch_in_micros"] = start_us;
  spec.query["end_time_since_epoch_in_micros"] = std::isinf(end_us) ? Json(nullptr) : Json(end_us);
  spec.description = fmt::format("times {} us to {} us (start or end inside)", float_text(start_us),
                                 float_text(end_us));
  spec.select = [start_us, end_us](const query::Selection& records) {
    return query::select_by_time(records, start_us, end_us);
  };
  return spec;
}

void add_between_modes_flags(CLI::App* sub, SelectionFlags& flags) {
  sub->add_option("--start-mode", flags.start_mode, "Mode at the start of the interval")
      ->check(CLI::IsMember(profile_mode_names()))
      ->required();
  sub->add_option("--end-mode", flags.end_mode, "Mode at the end of the interval")
      ->check(CLI::IsMember(profile_mode_names()))
      ->required();
}

Result<SelectionCommand> between_modes_spec(const SelectionFlags& flags) {
  Mode start = mode_from_name(flags.start_mode);
  Mode end = mode_from_name(flags.end_mode);
  SelectionCommand spec;
  spec.query["start_mode"] = flags.start_mode;
  spec.query["end_mode"] = flags.end_mode;
  spec.description = fmt::format("start mode {} and end mode {}", flags.start_mode, flags.end_mode);
  spec.select = [start, end](const query::Selection& records) {
    return query::select_between_modes(records, start, end);
  };
  return spec;
}

void no_flags(CLI::App*, SelectionFlags&) {}

// A selection without parameters.
SelectionCommand fixed_selection(const char* description, query::Selection (*select)(const query::Selection&)) {
  SelectionCommand spec;
  spec.query = Json::object();
  spec.description = description;
  spec.select = select;
  return spec;
}

Result<SelectionCommand> pre_step_zero_spec(const SelectionFlags&) {
  return fixed_selection("start phase start (before step 0)", query::select_pre_step_zero);
}

Result<SelectionCommand> post_hook_close_spec(const SelectionFlags&) {
  return fixed_selection("end phase end (to the end of the job)", query::select_post_hook_close);
}

const SelectionCommandDef kSelectionCommands[] = {
    {"fetch-by-step", "Aggregate the cProfile stats of a step interval of one mode", add_by_step_flags,
     by_step_spec},
    {"fetch-by-time", "Aggregate the cProfile stats whose start or end time lies in a time interval",
     add_by_time_flags, by_time_spec},
    {"between-modes", "Aggregate the cProfile stats that start in one mode and end in another",
     add_between_modes_flags, between_modes_spec},
    {"pre-step-zero", "Aggregate the cProfile stats from before the first step (start phase 'start')", no_flags,
     pre_step_zero_spec},
    {"post-hook-close", "Aggregate the cProfile stats that run to the end of the job (end phase 'end')",
     no_flags, post_hook_close_spec},
};

}  // namespace

void add_selection_commands(CLI::App& app, CommandList& commands) {
  for (const SelectionCommandDef& def : kSelectionCommands) {
    auto flags = std::make_shared<SelectionFlags>();
    CLI::App* sub = app.add_subcommand(def.name, def.help);
    add_query_options(sub, flags->query, true);
    def.add_flags(sub, *flags);
    commands.push_back(Command{sub, [flags, &def]() -> Result<int> {
                                 SPROF_TRY(SelectionCommand spec, def.spec(*flags));
                                 spec.command = def.name;
                                 return run_selection_command(flags->query, spec);
                               }});
  }
}

}  // namespace sprof::cli
