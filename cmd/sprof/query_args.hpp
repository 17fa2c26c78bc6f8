#pragma once
// Parsing the values of selection flags: modes, phases, steps and times.

#include <string>
#include <vector>

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

}  // namespace sprof::cli
