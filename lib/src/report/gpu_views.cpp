// The GPU views: nsys-style sums (kernels, memory operations, API calls) and HTA's analyses
// (idle time breakdown, temporal breakdown, launch delays, communication overlap).

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_map>

#include "report/launch_calls.hpp"
#include "sprof/gpu_report.hpp"

namespace sprof::report {
namespace {

using store::GpuOp;
using store::GpuOpKind;
using Interval = std::pair<int64_t, int64_t>;

bool selected(const GpuOp& op, const GpuSelection& selection) {
  if (selection.device && op.device != *selection.device) return false;
  return selection.contains(op.start_ns);
}

// Sorted, merged intervals; their total length.
std::vector<Interval> merge(std::vector<Interval> in) {
  std::sort(in.begin(), in.end());
  std::vector<Interval> out;
  for (const Interval& i : in) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t length(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const Interval& i : merged) total += i.second - i.first;
  return total;
}

// Length of the intersection of two merged interval lists.
int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].first, b[j].first);
    int64_t hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return total;
}

double quantile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  // Linear interpolation between closest ranks (numpy's default), as pandas computes quantiles.
  double pos = q * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(pos));
  size_t hi = std::min(sorted.size() - 1, lo + 1);
  return double(sorted[lo]) + (pos - double(lo)) * double(sorted[hi] - sorted[lo]);
}

template <class Row>
void by_total_then_name(std::vector<Row>& rows, const std::string Row::*name) {
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (a.time.total_ns != b.time.total_ns) return a.time.total_ns > b.time.total_ns;
    return a.*name < b.*name;
  });
}

bool in_hta_launch_scope(std::string_view api) {
  return api == "cudaLaunchKernel" || api == "cudaLaunchKernelExC" || api == "cudaMemcpyAsync" || api == "cudaMemsetAsync";
}

}  // namespace

DurationStats duration_stats(std::vector<int64_t> d) {
  DurationStats s;
  if (d.empty()) return s;
  std::sort(d.begin(), d.end());
  s.count = int64_t(d.size());
  double sum = 0;
  for (int64_t v : d) {
    s.total_ns += v;
    sum += double(v);
  }
  s.avg_ns = sum / double(d.size());
  s.median_ns = d.size() % 2 == 1 ? double(d[d.size() / 2]) : (double(d[d.size() / 2 - 1]) + double(d[d.size() / 2])) / 2;
  s.min_ns = d.front();
  s.max_ns = d.back();
  if (d.size() > 1) {
    double squares = 0;
    for (int64_t v : d) squares += (double(v) - s.avg_ns) * (double(v) - s.avg_ns);
    s.stddev_ns = std::sqrt(squares / double(d.size() - 1));
  }
  return s;
}

namespace {
bool starts(std::string_view name, std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; }
bool has(std::string_view name, std::string_view part) { return name.find(part) != std::string_view::npos; }
}  // namespace

// HTA's patterns (hta/common/types.py), matched as Python's re.match matches: from the start,
// case-sensitive; computation is whatever its inverse pattern leaves.
KernelType kernel_type(std::string_view name) {
  if (starts(name, "nccl") || starts(name, "hip") || starts(name, "hccl") || has(name, "ncclKernel")) {
    return KernelType::communication;
  }
  for (std::string_view p : {"Memcpy", "hipMemcpy", "Memset", "hipMemset", "dma"}) {
    if (starts(name, p)) return KernelType::memory;
  }
  bool not_compute = has(name, "Memcpy") || has(name, "Memset") || has(name, "dma") || has(name, "Sync") ||
                     starts(name, "Stream Wait Event") ||
                     (starts(name, "cuda") && name.find("LaunchKernel", 4) != std::string_view::npos);
  for (std::string_view p : {"runFunction", "job_exe", "packet", "pe_exe", "cpum_exe_subgraph", "collective_subgraph_execution"}) {
    not_compute = not_compute || starts(name, p);
  }
  return not_compute ? KernelType::other : KernelType::computation;
}

KernelType kernel_type(const GpuOp& op) { return kernel_type(op.name); }

std::vector<KernelSummary> kernel_summary(const GpuInput& input, const GpuSelection& selection) {
  std::map<std::string_view, std::vector<int64_t>> by_name;
  int64_t all = 0;
  for (const GpuOp& op : input.trace.ops) {
    if (op.kind != GpuOpKind::kernel || !selected(op, selection)) continue;
    by_name[op.name].push_back(op.duration_ns());
    all += op.duration_ns();
  }
  std::vector<KernelSummary> rows;
  for (auto& [name, durations] : by_name) {
    KernelSummary row{std::string(name), duration_stats(std::move(durations)), 0};
    row.share = all > 0 ? double(row.time.total_ns) / double(all) : 0;
    rows.push_back(std::move(row));
  }
  by_total_then_name(rows, &KernelSummary::name);
  return rows;
}

std::vector<MemorySummary> memory_summary(const GpuInput& input, const GpuSelection& selection) {
  struct Acc {
    std::vector<int64_t> durations;
    int64_t bytes = 0;
  };
  std::map<std::string_view, Acc> by_op;
  int64_t all = 0;
  for (const GpuOp& op : input.trace.ops) {
    if (op.kind == GpuOpKind::kernel || !selected(op, selection)) continue;
    Acc& acc = by_op[op.name];
    acc.durations.push_back(op.duration_ns());
    acc.bytes += op.bytes;
    all += op.duration_ns();
  }
  std::vector<MemorySummary> rows;
  for (auto& [name, acc] : by_op) {
    MemorySummary row;
    row.operation = name;
    row.time = duration_stats(std::move(acc.durations));
    row.bytes = acc.bytes;
    row.throughput_gb_s = row.time.total_ns > 0 ? double(row.bytes) / double(row.time.total_ns) : 0;  // B/ns = GB/s
    row.share = all > 0 ? double(row.time.total_ns) / double(all) : 0;
    rows.push_back(std::move(row));
  }
  by_total_then_name(rows, &MemorySummary::operation);
  return rows;
}

std::vector<ApiSummary> api_summary(const GpuInput& input, const GpuSelection& selection) {
  // Calls have no device: --device keeps the calls that launched work on it.
  std::unordered_map<int64_t, int32_t> device_of;
  if (selection.device) {
    for (const GpuOp& op : input.trace.ops) device_of.emplace(op.correlation, op.device);
  }
  std::map<std::pair<std::string_view, bool>, std::vector<int64_t>> by_name;
  int64_t all = 0;
  for (const store::GpuApiCall& call : input.trace.api_calls) {
    if (!selection.contains(call.start_ns)) continue;
    if (selection.device) {
      auto it = device_of.find(call.correlation);
      if (it == device_of.end() || it->second != *selection.device) continue;
    }
    by_name[{call.name, call.driver}].push_back(call.duration_ns());
    all += call.duration_ns();
  }
  std::vector<ApiSummary> rows;
  for (auto& [key, durations] : by_name) {
    ApiSummary row{std::string(key.first), key.second, duration_stats(std::move(durations)), 0};
    row.share = all > 0 ? double(row.time.total_ns) / double(all) : 0;
    rows.push_back(std::move(row));
  }
  by_total_then_name(rows, &ApiSummary::name);
  return rows;
}

std::vector<IdleRow> idle_breakdown(const GpuInput& input, const GpuSelection& selection, int64_t kernel_wait_ns) {
  LaunchCalls calls(input.trace);
  std::map<std::pair<int32_t, int64_t>, std::vector<const GpuOp*>> streams;
  for (const GpuOp& op : input.trace.ops) {
    if (selected(op, selection)) streams[{op.device, op.stream}].push_back(&op);
  }
  std::vector<IdleRow> rows;
  for (auto& [key, ops] : streams) {
    std::stable_sort(ops.begin(), ops.end(), [](const GpuOp* a, const GpuOp* b) { return a->start_ns < b->start_ns; });
    IdleRow row;
    row.device = key.first;
    row.stream = key.second;
    row.ops = int64_t(ops.size());
    int64_t first = ops.front()->start_ns, last = ops.front()->end_ns;
    std::vector<Interval> busy;
    for (size_t i = 0; i < ops.size(); ++i) {
      const GpuOp& op = *ops[i];
      busy.emplace_back(op.start_ns, op.end_ns);
      last = std::max(last, op.end_ns);
      if (i == 0) continue;
      // HTA: the gap to the previous op on the stream (by start order), classified by this op.
      int64_t previous_end = ops[i - 1]->end_ns;
      int64_t gap = op.start_ns - previous_end;
      if (gap <= 0) continue;
      const store::GpuApiCall* call = calls.of(op);
      if (call != nullptr && call->start_ns > previous_end) {
        row.host_wait_ns += gap;
      } else if (gap < kernel_wait_ns) {
        row.kernel_wait_ns += gap;
      } else {
        row.other_ns += gap;
      }
    }
    row.span_ns = last - first;
    row.busy_ns = length(merge(std::move(busy)));
    row.idle_ns = row.host_wait_ns + row.kernel_wait_ns + row.other_ns;
    row.idle_share = row.span_ns > 0 ? double(row.idle_ns) / double(row.span_ns) : 0;
    rows.push_back(row);
  }
  return rows;
}

std::vector<BreakdownRow> temporal_breakdown(const GpuInput& input, const GpuSelection& selection, bool per_step) {
  struct Part {
    std::vector<Interval> all;
    std::vector<Interval> compute;
  };
  // Key: device, then the step's index (or -1 for the whole selection).
  std::map<std::pair<int32_t, int64_t>, Part> parts;
  auto part_of = [&](int32_t device, int64_t start_ns) -> Part* {
    int64_t index = -1;
    if (per_step) {
      auto it = std::find_if(input.steps.begin(), input.steps.end(),
                             [&](const GpuStepWindow& s) { return start_ns >= s.start_ns && start_ns < s.end_ns; });
      if (it == input.steps.end()) return nullptr;
      index = int64_t(it - input.steps.begin());
    }
    return &parts[{device, index}];
  };
  for (const GpuOp& op : input.trace.ops) {
    if (!selected(op, selection)) continue;
    Part* part = part_of(op.device, op.start_ns);
    if (part == nullptr) continue;
    part->all.emplace_back(op.start_ns, op.end_ns);
    if (kernel_type(op) == KernelType::computation) part->compute.emplace_back(op.start_ns, op.end_ns);
  }
  // HTA counts every event on a stream as busy, the cuda_sync events kineto puts there too
  // (its "Stream Sync" names are never computation).
  for (const store::GpuSync& sync : input.trace.syncs) {
    if (sync.stream < 0 || sync.device < 0) continue;
    if ((selection.device && sync.device != *selection.device) || !selection.contains(sync.start_ns)) continue;
    if (Part* part = part_of(sync.device, sync.start_ns)) part->all.emplace_back(sync.start_ns, sync.end_ns);
  }
  std::vector<BreakdownRow> rows;
  for (auto& [key, part] : parts) {
    std::vector<Interval> all = merge(std::move(part.all));
    if (all.empty()) continue;
    BreakdownRow row;
    row.device = key.first;
    if (key.second >= 0) row.step = input.steps[size_t(key.second)];
    row.span_ns = all.back().second - all.front().first;
    int64_t busy = length(all);
    row.idle_ns = row.span_ns - busy;
    row.compute_ns = length(merge(std::move(part.compute)));
    row.non_compute_ns = busy - row.compute_ns;
    rows.push_back(row);
  }
  return rows;
}

std::vector<LaunchSummary> launch_summary(const GpuInput& input, const GpuSelection& selection, const LaunchOptions& options) {
  LaunchCalls calls(input.trace);
  struct Launch {
    int64_t delay_ns;
    const GpuOp* op;
    const store::GpuApiCall* call;
  };
  std::map<int32_t, LaunchSummary> by_device;
  std::map<int32_t, std::vector<Launch>> launches;
  for (const GpuOp& op : input.trace.ops) {
    if (!selected(op, selection)) continue;
    const store::GpuApiCall* call = calls.of(op);
    const bool kernel = op.kind == GpuOpKind::kernel;
    const bool in_scope = call != nullptr && (!options.hta_scope || in_hta_launch_scope(call->name));
    if (!kernel && !in_scope) continue;
    LaunchSummary& s = by_device[op.device];
    s.device = op.device;
    if (kernel) {
      ++s.kernels;
      if (op.duration_ns() < 10'000) ++s.short_kernels;
      if (call == nullptr) ++s.unmatched_kernels;
    }
    if (!in_scope) continue;
    ++s.launches;
    int64_t delay = std::max<int64_t>(0, op.start_ns - call->end_ns);
    launches[op.device].push_back({delay, &op, call});
    // HTA's three outlier sets (CudaKernelAnalysis.visualize_cuda_launch_kernel_info).
    if (call->duration_ns() > options.runtime_cutoff_ns) ++s.long_launches;
    if (delay > options.launch_delay_cutoff_ns) ++s.long_delays;
    if (call->duration_ns() <= options.runtime_cutoff_ns && op.duration_ns() < call->duration_ns()) ++s.gpu_shorter_than_cpu;
  }
  std::vector<LaunchSummary> rows;
  for (auto& [device, s] : by_device) {
    std::vector<Launch>& l = launches[device];
    // Longest delays first (ties in trace order), then the rest by delay for the quantiles.
    std::stable_sort(l.begin(), l.end(), [](const Launch& a, const Launch& b) { return a.delay_ns > b.delay_ns; });
    for (size_t i = 0; i < l.size() && i < options.outliers; ++i) {
      const Launch& x = l[i];
      s.outliers.push_back({std::string(x.op->name), std::string(x.call->name), x.op->correlation, x.call->tid,
                            x.call->start_ns, x.call->duration_ns(), x.delay_ns, x.op->duration_ns()});
    }
    std::vector<int64_t> d(l.size());
    for (size_t i = 0; i < l.size(); ++i) d[i] = l[l.size() - 1 - i].delay_ns;  // ascending
    s.p95_delay_ns = quantile(d, 0.95);
    s.p99_delay_ns = quantile(d, 0.99);
    s.delay = duration_stats(std::move(d));
    rows.push_back(std::move(s));
  }
  return rows;
}

int64_t duplicated_correlations(const store::GpuTrace& trace) { return LaunchCalls(trace).duplicated(); }

std::vector<OverlapRow> overlap_summary(const GpuInput& input, const GpuSelection& selection) {
  std::map<int32_t, std::pair<std::vector<Interval>, std::vector<Interval>>> by_device;
  for (const GpuOp& op : input.trace.ops) {
    if (!selected(op, selection)) continue;
    KernelType type = kernel_type(op);
    if (type != KernelType::communication && type != KernelType::computation) continue;
    auto& [communication, computation] = by_device[op.device];
    (type == KernelType::communication ? communication : computation).emplace_back(op.start_ns, op.end_ns);
  }
  std::vector<OverlapRow> rows;
  for (auto& [device, lists] : by_device) {
    std::vector<Interval> communication = merge(std::move(lists.first));
    std::vector<Interval> computation = merge(std::move(lists.second));
    OverlapRow row;
    row.device = device;
    row.communication_ns = length(communication);
    row.computation_ns = length(computation);
    row.overlapped_ns = intersection(communication, computation);
    row.overlap_share = row.communication_ns > 0 ? double(row.overlapped_ns) / double(row.communication_ns) : 0;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace sprof::report
