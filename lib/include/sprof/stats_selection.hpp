#pragma once
// The selections of smdebug's cProfileAnalysis fetch_* calls, built from their arguments as text
// (flags named in errors), and one selection run on a node of a stats source: fetch-by-step,
// fetch-by-time, between-modes, pre-step-zero and post-hook-close.

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "sprof/query.hpp"
#include "sprof/result.hpp"
#include "sprof/stats_source.hpp"

namespace sprof::query {

struct StatsSelection {
  nlohmann::ordered_json request;  // the request as JSON output echoes it
  std::string description;         // the request in words, for the table's header
  std::function<Selection(const Selection&)> select;
};

// fetch_profile_stats_by_step: steps as parse_step_arg reads them (an empty end: the start step),
// names as the flags' checks accepted them.
Result<StatsSelection> by_step_selection(const std::string& start_step, const std::string& end_step,
                                         const std::string& mode, const std::string& start_phase,
                                         const std::string& end_phase);
// fetch_profile_stats_by_time: times as parse_time_arg reads them (an empty end: no end).
Result<StatsSelection> by_time_selection(const std::string& start_time, const std::string& end_time);
// fetch_profile_stats_between_modes.
StatsSelection between_modes_selection(const std::string& start_mode, const std::string& end_mode);
StatsSelection pre_step_zero_selection();
StatsSelection post_hook_close_selection();

struct SelectedStats {
  NodeSelection node;   // the node's records
  Selection selection;  // those the selection kept
  Aggregate aggregate;
};
// Runs `selection` on the records of `node` ("any": the earliest's) and aggregates what it
// keeps; warns when nothing matches. `dir` names the profile in warnings.
Result<SelectedStats> select_stats(const StatsSource& source, const std::string& node, const StatsSelection& selection,
                                   const std::string& dir);

}  // namespace sprof::query
