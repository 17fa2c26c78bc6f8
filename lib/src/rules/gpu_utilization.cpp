#include "rules/gpu_utilization.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "rules/numeric.hpp"

namespace sprof::rules {
namespace {

using Interval = TimeRange;  // [start, end) epoch ns

// Busy ns of `busy` inside [from, to); `cursor` walks forward as the ticks do.
int64_t busy_in(const std::vector<Interval>& busy, size_t& cursor, int64_t from, int64_t to) {
  while (cursor < busy.size() && busy[cursor].second <= from) ++cursor;
  int64_t total = 0;
  for (size_t i = cursor; i < busy.size() && busy[i].first < to; ++i) {
    total += std::min(to, busy[i].second) - std::max(from, busy[i].first);
  }
  return total;
}

}  // namespace

std::vector<store::SystemMetric> gpu_utilization_from_kernels(const store::GpuTrace& trace,
                                                              const std::vector<store::SystemMetric>& system,
                                                              int64_t epoch_offset_ns) {
  std::vector<store::SystemMetric> out;
  for (const auto& m : system) {
    if (m.dimension == "GPUUtilization") return out;
  }
  // A GPU is its uuid when the trace has one: two processes' ordinal 0 may be different GPUs.
  std::map<int32_t, std::string> uuid_by_ordinal;
  for (const store::GpuDevice& d : trace.devices) {
    if (!d.uuid.empty()) uuid_by_ordinal.emplace(d.id, d.uuid);
  }
  std::map<std::string, std::vector<Interval>> kernels;  // by GPU key
  for (const store::GpuOp& op : trace.ops) {
    if (op.kind != store::GpuOpKind::kernel || op.end_ns <= op.start_ns) continue;
    auto it = uuid_by_ordinal.find(op.device);
    std::string key = it != uuid_by_ordinal.end() ? it->second : "ordinal " + std::to_string(op.device);
    kernels[key].emplace_back(op.start_ns + epoch_offset_ns, op.end_ns + epoch_offset_ns);
  }
  if (kernels.empty()) return out;
  std::vector<std::pair<std::string, std::vector<Interval>>> gpus;  // index = N of gpu<N>
  for (auto& [key, v] : kernels) gpus.emplace_back(key, union_of(std::move(v)));

  std::map<std::string, std::set<double>> ticks;  // per node: its CPU metrics' timestamps
  for (const auto& m : system) {
    if (m.type == "cpu") ticks[m.node_id].insert(m.timestamp);
  }
  for (const auto& [node, stamps] : ticks) {
    std::vector<size_t> cursors(gpus.size(), 0);
    std::optional<int64_t> previous;
    for (double t : stamps) {
      const auto now = static_cast<int64_t>(t * 1e9);
      if (previous && now > *previous) {
        for (size_t g = 0; g < gpus.size(); ++g) {
          int64_t busy = busy_in(gpus[g].second, cursors[g], *previous, now);
          store::SystemMetric m;
          m.type = "gpu";
          m.name = "gpu" + std::to_string(g);
          m.dimension = "GPUUtilization";
          m.value = 100.0 * static_cast<double>(busy) / static_cast<double>(now - *previous);
          m.node_id = node;
          m.timestamp = t;
          out.push_back(std::move(m));
        }
      }
      previous = now;
    }
  }
  return out;
}

}  // namespace sprof::rules
