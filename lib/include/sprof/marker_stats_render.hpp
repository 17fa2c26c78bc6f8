#pragma once
// `sprof markers DIR`: a process's aggregated steps, markers and counters, laid out exactly as
// the bootstrap's sprof.dumps() lays them out (lib/src/bootstrap/python/sprof/_stats.py).

#include <string>

#include "sprof/marker_stats.hpp"

namespace sprof::render {

std::string marker_stats_table(const report::MarkerStats& stats);
// The object sprof.dumps(format="json") returns (same keys; compare as JSON, not as text).
std::string marker_stats_json(const report::MarkerStats& stats);

}  // namespace sprof::render
