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
#include "sprof/stats_selection.hpp"
#include "sprof/stats_source.hpp"

namespace sprof::render {

// Stats records with smdebug's list_profile_stats keys, plus stats_dir and name_format, as an
// array prewritten at kAnswerJsonIndent (sprof/json_output.hpp: only append_json_text writes it).
Json records_json(const std::vector<const store::StatsRecord*>& records);
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

// list-stats: layout level, the records' smdebug keys and the index's warnings after the
// document's head; and the records as CSV.
void append_list_stats_json(Json& into, const std::string& dir, const store::ProfileIndex& index,
                            const std::vector<const store::StatsRecord*>& rows);
std::string records_csv(const std::vector<const store::StatsRecord*>& rows);

// The answers of the stats queries (stats_query_render.cpp). "source" and, for raw samples,
// "python_timer": what a query read.
void append_source_json(Json& into, const query::StatsSource& source);
// A selection command's answer after the document's head: profile_dir, node_id, query, source,
// warnings, the aggregate.
void append_selection_json(Json& into, const std::string& dir, const query::StatsSource& source,
                           const query::StatsSelection& selection, const query::SelectedStats& selected,
                           const FunctionOrder& order);
// Its text: a line saying what matched, the time note and the table.
std::string selection_text(const query::StatsSource& source, const query::StatsSelection& selection,
                           const query::SelectedStats& selected, const FunctionOrder& order);

// by-phase's answer: phases by (start mode, end mode) (`training`) or job phases, for `compat`.
struct PhasesAnswer {
  std::string dir;
  std::string node_id;
  bool training = false;
  std::string compat;
  const std::vector<query::PhaseAggregate>* phases = nullptr;
};
void append_phases_json(Json& into, const PhasesAnswer& answer, const query::StatsSource& source,
                        const FunctionOrder& order);
std::string phases_csv(const PhasesAnswer& answer, const FunctionOrder& order);
std::string phases_text(const PhasesAnswer& answer, const query::StatsSource& source, const FunctionOrder& order);

}  // namespace sprof::render
