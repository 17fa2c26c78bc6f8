#pragma once
// Stats records and aggregates, rendered: smdebug's list_profile_stats keys as JSON and CSV, the
// list-stats table, and an aggregate as JSON keys, a pstats text table or CSV rows.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/analyze_render.hpp"
#include "sprof/profile.hpp"
#include "sprof/pstats_table.hpp"
#include "sprof/query.hpp"

namespace sprof::render {

// A stats record with smdebug's list_profile_stats keys, plus stats_dir and name_format.
Json record_json(const store::StatsRecord& record);
Json problems_json(const std::vector<store::Problem>& problems);
std::vector<std::string> record_csv_header();
std::vector<std::string> record_csv_fields(const store::StatsRecord& record);
// smdebug's numeric steps as text: -1 for a start `*`, "inf" for an end `*`.
std::string start_step_text(const store::StatsDirName& name);
std::string end_step_text(const store::StatsDirName& name);
// What the times of an aggregate's table are: the selection's wall time, and whose samples the
// functions' times add up (every sampled thread's, which can exceed the wall time), one line.
std::string aggregate_time_note(const query::Aggregate& aggregate);

// list-stats --files: one row per record (stats file).
std::string records_table(const std::vector<const store::StatsRecord*>& records, const TextStyle& style);
// list-stats: one row per stats directory (interval), its files' profilers as one column.
std::string intervals_table(const std::vector<const store::StatsRecord*>& records, const TextStyle& style);

// nodes: one entry or row per node.
Json nodes_json(const std::vector<query::NodeSummary>& nodes);
std::string nodes_csv(const std::vector<query::NodeSummary>& nodes);
std::string nodes_table(const std::vector<query::NodeSummary>& nodes, const TextStyle& style);

// Which functions of an aggregate are shown, in which order.
struct FunctionOrder {
  std::string sort = "cumtime";  // tottime | cumtime | ncalls | pcalls
  size_t limit = 0;              // 0 = every function
};

// The aggregate as JSON keys appended to `into`: stats, skipped, totals, functions.
void append_aggregate_json(Json& into, const query::Aggregate& aggregate, const FunctionOrder& order);
// The aggregate as a pstats-style text table.
std::string aggregate_table(const query::Aggregate& aggregate, const FunctionOrder& order);
// The aggregate's function rows as CSV (after `prefix` columns, if any).
std::string aggregate_csv(const query::Aggregate& aggregate, const FunctionOrder& order,
                          const std::vector<std::string>& prefix_header,
                          const std::vector<std::string>& prefix_fields, bool header);

}  // namespace sprof::render
