#pragma once
// `sprof markers DIR`: a process's aggregated steps, markers and counters, laid out exactly as
// the bootstrap's sprof.dumps() lays them out (lib/src/bootstrap/python/sprof/_stats.py).

#include <string>
#include <vector>

#include "sprof/marker_stats.hpp"

namespace sprof::render {

std::string marker_stats_table(const report::MarkerStats& stats);
// The object sprof.dumps(format="json") returns (same keys; compare as JSON, not as text).
std::string marker_stats_json(const report::MarkerStats& stats);

// Several processes' statistics: each table under "Process PID", or one JSON object by pid; with
// `single`, the one process's table or object alone, as sprof.dumps() gave it.
std::string markers_text(const std::vector<report::MarkerStats>& processes, bool single);
std::string markers_json(const std::vector<report::MarkerStats>& processes, bool single);

}  // namespace sprof::render
