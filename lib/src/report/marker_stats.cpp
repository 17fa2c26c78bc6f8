// sprof markers DIR / sprof.dumps(): the aggregates of steps, tasks, frames, events, markers and
// counters of a process.

#include "sprof/marker_stats.hpp"

#include <algorithm>
#include <map>

#include "sprof/modes.hpp"

namespace sprof::report {

namespace {

void add(std::map<std::string, MarkerStatRow>& rows, const std::string& name, double value) {
  auto [it, added] = rows.try_emplace(name);
  MarkerStatRow& r = it->second;
  if (added) {
    r.name = name;
    r.min = r.max = value;
  }
  ++r.count;
  r.total += value;
  r.min = std::min(r.min, value);
  r.max = std::max(r.max, value);
  r.last = value;
}

double sort_key(const MarkerStatRow& r, MarkerSort sort) {
  switch (sort) {
    case MarkerSort::total: return r.total;
    case MarkerSort::avg: return r.avg;
    case MarkerSort::min: return r.min;
    case MarkerSort::max: return r.max;
    case MarkerSort::count: return static_cast<double>(r.count);
  }
  return r.total;
}

std::vector<MarkerStatRow> sorted(const std::map<std::string, MarkerStatRow>& rows, MarkerSort sort, bool ascending) {
  std::vector<MarkerStatRow> out;
  for (const auto& [name, r] : rows) {
    out.push_back(r);
    out.back().avg = r.total / static_cast<double>(r.count);
  }
  std::stable_sort(out.begin(), out.end(), [&](const MarkerStatRow& a, const MarkerStatRow& b) {
    const double ka = sort_key(a, sort), kb = sort_key(b, sort);
    if (ka != kb) return ascending ? ka < kb : ka > kb;
    return a.name < b.name;
  });
  return out;
}

}  // namespace

MarkerStats marker_stats(const timeline::ProcessTimeline& process, MarkerSort sort, bool ascending) {
  std::map<std::string, MarkerStatRow> steps, markers, counters, tasks, frames, events;
  for (const timeline::Step& s : process.steps) {
    // The bootstrap measures a step from its begin marker's time to its end marker's, in ns,
    // and sums whole nanoseconds before it divides: the same here, so both print the same digits.
    add(steps, std::string(to_string(s.mode)), static_cast<double>(s.end_ns - s.begin_ns));
  }
  for (const timeline::RangeEvent& r : process.ranges) {
    auto& rows = r.kind == store::RangeKind::task ? tasks : r.kind == store::RangeKind::frame ? frames : events;
    add(rows, r.domain + ":" + r.name, static_cast<double>(r.end_ns - r.begin_ns));
  }
  for (auto* durations : {&steps, &tasks, &frames, &events}) {
    for (auto& [name, r] : *durations) {
      r.total /= 1e6;
      r.min /= 1e6;
      r.max /= 1e6;
      r.last /= 1e6;
    }
  }
  for (const timeline::InstantEvent& e : process.instants) add(markers, e.domain + ":" + e.name, 1);
  for (const timeline::CounterValue& c : process.counters) add(counters, c.domain + ":" + c.name, c.value);
  MarkerStats out;
  out.pid = process.pid;
  out.steps = sorted(steps, sort, ascending);
  out.tasks = sorted(tasks, sort, ascending);
  out.frames = sorted(frames, sort, ascending);
  out.events = sorted(events, sort, ascending);
  out.markers = sorted(markers, MarkerSort::count, ascending);
  out.counters = sorted(counters, sort, ascending);
  return out;
}

MarkerSort parse_marker_sort(std::string_view name) {
  if (name == "avg") return MarkerSort::avg;
  if (name == "min") return MarkerSort::min;
  if (name == "max") return MarkerSort::max;
  if (name == "count") return MarkerSort::count;
  return MarkerSort::total;
}

Result<std::vector<MarkerStats>> profile_marker_stats(const query::Profile& profile, int pid, MarkerSort sort,
                                                      bool ascending, const std::string& dir) {
  SPROF_TRY(const timeline::StepTimeline* timeline, profile.step_timeline());
  std::vector<MarkerStats> out;
  for (const auto& p : timeline->processes) {
    if (pid == 0 || p.pid == pid) out.push_back(marker_stats(p, sort, ascending));
  }
  if (pid != 0 && out.empty()) return make_error(ErrorKind::usage, "--pid {}: no markers of that process in {}", pid, dir);
  if (out.empty()) return make_error(ErrorKind::bad_input, "{}: no markers (markers/markers.log)", dir);
  return out;
}

}  // namespace sprof::report
