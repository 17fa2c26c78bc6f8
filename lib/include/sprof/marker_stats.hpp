#pragma once
// What one process recorded through sprof's Python API, aggregated as MXNet's profiler.dumps
// does: steps per mode, tasks, frames and events (durations), markers (counts), counters (values). `sprof.dumps()` in the
// process and `sprof markers DIR` after the run print the same table from the same markers.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/open_profile.hpp"
#include "sprof/result.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::report {

struct MarkerStatRow {
  std::string name;  // mode ("train"), or "domain:name"
  uint64_t count = 0;
  double total = 0;  // steps: ms; markers: the count; counters: the sum of the values
  double min = 0, max = 0, avg = 0;
  double last = 0;   // counters only
};

struct MarkerStats {
  int32_t pid = 0;
  std::vector<MarkerStatRow> steps;
  std::vector<MarkerStatRow> tasks;   // "domain:name", ms
  std::vector<MarkerStatRow> frames;
  std::vector<MarkerStatRow> events;
  std::vector<MarkerStatRow> markers;
  std::vector<MarkerStatRow> counters;
};

enum class MarkerSort { total, avg, min, max, count };

// Steps ended by a marker (a step cut at the process's end counts too: it ended there), in the
// order asked (descending unless `ascending`; ties by name). Markers sort by count whatever is asked.
MarkerStats marker_stats(const timeline::ProcessTimeline& process, MarkerSort sort, bool ascending);

// "total", "avg", "min", "max" or "count"; anything else: total.
MarkerSort parse_marker_sort(std::string_view name);

// The statistics of each process of `profile` with markers, or of `pid` only (0: every process).
// Usage error: `pid` recorded none; bad_input: no process did (`dir` names the profile).
Result<std::vector<MarkerStats>> profile_marker_stats(const query::Profile& profile, int pid, MarkerSort sort,
                                                      bool ascending, const std::string& dir);

}  // namespace sprof::report
