#pragma once
// Parsing the values of selection flags: modes, phases, steps and times.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sprof/result.hpp"
#include "sprof/stats_dir.hpp"

namespace sprof::cli {

// Names accepted by --mode/--start-mode/--end-mode and --start-phase/--end-phase.
std::vector<std::string> profile_mode_names();
std::vector<std::string> step_phase_names();
Mode mode_from_name(const std::string& name);  // name already validated
Phase phase_from_name(const std::string& name);   // name already validated

// A step: an integer, or `*` (-1 as a start step, +inf as an end step, as smdebug reads them).
Result<double> parse_step_arg(const std::string& flag, const std::string& text, bool is_end);

// A time since the epoch: microseconds (a plain number or with `us`), or with a unit suffix
// `ms` or `s` (`1596585374.96s`). Values in seconds are multiplied by 1e6 as smdebug's
// fetch_profile_stats_by_time does.
Result<double> parse_time_arg(const std::string& flag, const std::string& text);

// The step and time selection flags (--mode, --start-step, --end-step; --start-time, --end-time)
// of commands that pick windows of a run (export, gpu), parsed. Steps and times cannot be mixed.
struct RunSelectionFlags {
  std::string mode, start_step, end_step, start_time, end_time;
  bool steps() const { return !mode.empty() || !start_step.empty() || !end_step.empty(); }
  bool times() const { return !start_time.empty() || !end_time.empty(); }
};
struct StepSelection {
  std::optional<Mode> mode;
  std::optional<int64_t> first, last;  // inclusive; unset: open (the end step flag is exclusive)
};
struct TimeSelection {
  std::optional<double> start_us, end_us;  // epoch µs
};
// --mode, --start-step, --end-step, --start-time and --end-time; `what` is what they select
// ("samples", "GPU work").
void add_run_selection_options(CLI::App* app, RunSelectionFlags& flags, const std::string& what);
Status check_run_selection(const RunSelectionFlags& flags);
Result<StepSelection> parse_step_selection(const RunSelectionFlags& flags);
Result<TimeSelection> parse_time_selection(const RunSelectionFlags& flags);

}  // namespace sprof::cli
