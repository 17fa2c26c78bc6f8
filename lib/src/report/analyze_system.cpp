// analyze: the system metrics of each node summarised per metric over the run.

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/analyze_parts.hpp"
#include "rules/numeric.hpp"

namespace sprof::report {
namespace {

struct Series {
  std::string label;
  std::string unit;
  bool per_device = false;                 // averaged over the devices of a tick
  std::set<std::string> devices;
  std::map<double, std::pair<double, int>> by_tick;  // timestamp -> (sum, records)
};

int type_rank(const std::string& type) {
  static const char* order[] = {"cpu", "gpu", "memory", "i/o", "network", "process"};
  for (int i = 0; i < 6; ++i) {
    if (type == order[i]) return i;
  }
  return 6;
}

std::string unit_of(const store::SystemMetric& m) {
  if (m.type == "process") {
    if (m.name == "CPUUtilization") return "% of a core";
    if (m.name == "ResidentMemoryBytes") return "B";
    return "";
  }
  if (m.type == "cpu" || m.type == "gpu") return "%";
  const std::string& what = m.name.empty() ? m.dimension : m.name;
  if (what.find("BytesPerSecond") != std::string::npos) return "B/s";
  if (what.find("Percent") != std::string::npos || what.find("Utilization") != std::string::npos) return "%";
  if (what == "IOPS") return "1/s";
  if (what.find("Bytes") != std::string::npos) return "B";
  return "";
}

}  // namespace

void summarize_system(const std::vector<store::SystemMetric>& metrics, std::vector<SystemCoverage>& coverage,
                      std::vector<SystemUsageRow>& rows) {
  std::vector<std::string> nodes;
  std::map<std::string, std::set<double>> ticks;
  // node -> (type rank, first-seen index, key) -> series
  std::map<std::string, std::map<std::tuple<int, size_t, std::string>, Series>> series;
  std::map<std::string, std::map<std::string, size_t>> first_seen;
  for (const auto& m : metrics) {
    if (ticks.find(m.node_id) == ticks.end()) nodes.push_back(m.node_id);
    ticks[m.node_id].insert(m.timestamp);
    bool per_device = m.type == "cpu" || m.type == "gpu";
    std::string key = per_device ? m.type + "|" + m.dimension : m.type + "|" + m.name + "|" + m.dimension;
    auto& seen = first_seen[m.node_id];
    size_t index = seen.try_emplace(key, seen.size()).first->second;
    Series& s = series[m.node_id][{type_rank(m.type), index, key}];
    if (s.label.empty()) {
      s.per_device = per_device;
      s.unit = unit_of(m);
      if (per_device) {
        s.label = m.dimension;
      } else if (m.type == "process") {
        s.label = "process tree " + m.name;
      } else {
        s.label = m.name.empty() ? m.dimension : m.name;
        if (!m.name.empty() && !m.dimension.empty()) s.label += " (" + m.dimension + ")";
      }
    }
    if (per_device) s.devices.insert(m.name);
    auto& tick = s.by_tick[m.timestamp];
    tick.first += m.value;
    tick.second += 1;
  }
  for (const auto& node : nodes) {
    const auto& t = ticks[node];
    SystemCoverage c;
    c.node = node;
    c.ticks = t.size();
    c.first_s = *t.begin();
    c.last_s = *t.rbegin();
    std::vector<double> gaps;
    for (auto it = t.begin(), next = std::next(t.begin()); next != t.end(); ++it, ++next) gaps.push_back(*next - *it);
    c.interval_s = gaps.empty() ? 0.0 : rules::median(gaps);
    coverage.push_back(c);
    for (const auto& [key, s] : series[node]) {
      std::vector<double> values;
      for (const auto& [ts, tick] : s.by_tick) {
        values.push_back(s.per_device ? tick.first / tick.second : tick.first);
      }
      SystemUsageRow row;
      row.node = node;
      row.metric = s.per_device ? fmt::format("{} (mean of {} {})", s.label, s.devices.size(),
                                              std::get<2>(key).rfind("gpu", 0) == 0 ? "GPUs" : "cores")
                                : s.label;
      row.unit = s.unit;
      row.ticks = values.size();
      row.mean = rules::mean(values);
      std::sort(values.begin(), values.end());
      row.p50 = rules::quantile_sorted(values, 0.50);
      row.p95 = rules::quantile_sorted(values, 0.95);
      row.min = values.front();
      row.max = values.back();
      rows.push_back(std::move(row));
    }
  }
}

}  // namespace sprof::report
