#pragma once
// Printing an aggregated pstats table: sorting as pstats.Stats.sort_stats does, the
// print_stats text layout, and the JSON/CSV forms of the same rows.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/pstats.hpp"

namespace sprof::render {

using Json = nlohmann::ordered_json;

enum class SortKey { tottime, cumtime, ncalls, pcalls };

// "tottime" | "cumtime" | "ncalls" | "pcalls"; anything else is cumtime, pstats' default here.
SortKey parse_sort_key(const std::string& text);
// pstats' description of the order, for the "Ordered by:" line.
std::string sort_description(SortKey key);

using FunctionEntry = store::StatsTable::Entry;

// Entries sorted descending by the key; ties keep table (first-seen) order, as pstats'
// stable sort does. limit 0 keeps all. store::no_samples_function() is left out.
std::vector<const FunctionEntry*> sorted_functions(const store::StatsTable& table, SortKey key,
                                                   size_t limit);

// The table's functions that sorted_functions lists (all but store::no_samples_function()).
size_t listed_function_count(const store::StatsTable& table);

// pstats.func_std_string: "file:line(name)", or "{name}" / "name" for built-ins ("~", 0, ...).
std::string func_std_string(const store::FunctionKey& key);

struct StatsTotals {
  int64_t total_calls = 0;
  int64_t primitive_calls = 0;
  double total_tt = 0.0;
  bool estimated = false;  // sprof record's sampled stats: the totals line says so
};

// pstats.Stats.print_stats: the totals line, "Ordered by", the reduction note and the
// ncalls/tottime/percall/cumtime/percall rows.
std::string render_function_table(const std::vector<const FunctionEntry*>& rows,
                                  size_t function_count, const StatsTotals& totals, SortKey key);

// [{file, line, function, label, ncalls, pcalls, tottime, cumtime, tottime_percall,
//   cumtime_percall, callers: [{file, line, function, label, ncalls, pcalls, tottime, cumtime}]}],
// prewritten at kAnswerJsonIndent (sprof/json_output.hpp: only append_json_text writes it).
Json functions_json(const std::vector<const FunctionEntry*>& rows);

std::vector<std::string> function_csv_header();
std::vector<std::string> function_csv_fields(const FunctionEntry& entry);

}  // namespace sprof::render
