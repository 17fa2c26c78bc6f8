// The GPU views as tables and JSON rows.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sprof/gpu_render.hpp"

namespace sprof::render {
namespace {

using nlohmann::ordered_json;

// µs with ns resolution in JSON: rounded to 3 decimals so that sums read back as printed.
double us_json(double ns) { return std::round(ns) / 1000.0; }
std::string us_text(double ns) { return fmt::format("{:.3f}", ns / 1000.0); }
std::string percent_text(double share) { return fmt::format("{:.1f}", share * 100.0); }
double share_json(double share) { return std::round(share * 1e6) / 1e6; }

void add_stats(ordered_json& j, const report::DurationStats& s) {
  j["instances"] = s.count;
  j["total_us"] = us_json(double(s.total_ns));
  j["avg_us"] = us_json(s.avg_ns);
  j["median_us"] = us_json(s.median_ns);
  j["min_us"] = us_json(double(s.min_ns));
  j["max_us"] = us_json(double(s.max_ns));
  j["stddev_us"] = us_json(s.stddev_ns);
}

std::vector<std::string> stats_cells(double share, const report::DurationStats& s) {
  return {percent_text(share), us_text(double(s.total_ns)), std::to_string(s.count), us_text(s.avg_ns),
          us_text(s.median_ns), us_text(double(s.min_ns)), us_text(double(s.max_ns)), us_text(s.stddev_ns)};
}

const std::vector<std::string> kStatsHeaders = {"Time (%)", "Total (us)", "Instances", "Avg (us)",
                                                "Med (us)", "Min (us)",   "Max (us)",  "StdDev (us)"};

std::string bytes_text(int64_t bytes) {
  if (bytes >= (int64_t(1) << 30)) return fmt::format("{:.2f} GiB", double(bytes) / double(int64_t(1) << 30));
  if (bytes >= (int64_t(1) << 20)) return fmt::format("{:.2f} MiB", double(bytes) / double(int64_t(1) << 20));
  if (bytes >= (int64_t(1) << 10)) return fmt::format("{:.2f} KiB", double(bytes) / 1024.0);
  return fmt::format("{} B", bytes);
}

}  // namespace

GpuTable kernels_table(const std::vector<report::KernelSummary>& rows) {
  GpuTable t;
  t.headers = kStatsHeaders;
  t.headers.push_back("Name");
  for (const report::KernelSummary& r : rows) {
    auto cells = stats_cells(r.share, r.time);
    cells.push_back(r.name);
    t.rows.push_back(std::move(cells));
    ordered_json j{{"name", r.name}};
    add_stats(j, r.time);
    j["share"] = share_json(r.share);
    t.json.push_back(std::move(j));
  }
  return t;
}

GpuTable memory_table(const std::vector<report::MemorySummary>& rows) {
  GpuTable t;
  t.headers = kStatsHeaders;
  t.headers.insert(t.headers.end(), {"Bytes", "GB/s", "Operation"});
  for (const report::MemorySummary& r : rows) {
    auto cells = stats_cells(r.share, r.time);
    cells.insert(cells.end(), {bytes_text(r.bytes), fmt::format("{:.3f}", r.throughput_gb_s), r.operation});
    t.rows.push_back(std::move(cells));
    ordered_json j{{"operation", r.operation}};
    add_stats(j, r.time);
    j["bytes"] = r.bytes;
    j["throughput_gb_s"] = std::round(r.throughput_gb_s * 1e6) / 1e6;
    j["share"] = share_json(r.share);
    t.json.push_back(std::move(j));
  }
  return t;
}

GpuTable api_table(const std::vector<report::ApiSummary>& rows) {
  GpuTable t;
  t.headers = kStatsHeaders;
  t.headers.insert(t.headers.end(), {"Kind", "Name"});
  for (const report::ApiSummary& r : rows) {
    auto cells = stats_cells(r.share, r.time);
    cells.insert(cells.end(), {r.driver ? "driver" : "runtime", r.name});
    t.rows.push_back(std::move(cells));
    ordered_json j{{"name", r.name}, {"kind", r.driver ? "driver" : "runtime"}};
    add_stats(j, r.time);
    j["share"] = share_json(r.share);
    t.json.push_back(std::move(j));
  }
  return t;
}

GpuTable idle_table(const std::vector<report::IdleRow>& rows) {
  GpuTable t;
  t.headers = {"Device", "Stream", "Ops", "Span (us)", "Idle (us)", "Idle (%)", "Host wait (us)", "Kernel wait (us)", "Other (us)"};
  for (const report::IdleRow& r : rows) {
    t.rows.push_back({std::to_string(r.device), std::to_string(r.stream), std::to_string(r.ops), us_text(double(r.span_ns)),
                      us_text(double(r.idle_ns)), percent_text(r.idle_share), us_text(double(r.host_wait_ns)),
                      us_text(double(r.kernel_wait_ns)), us_text(double(r.other_ns))});
    t.json.push_back(ordered_json{{"device", r.device},
                                  {"stream", r.stream},
                                  {"ops", r.ops},
                                  {"span_us", us_json(double(r.span_ns))},
                                  {"busy_us", us_json(double(r.busy_ns))},
                                  {"idle_us", us_json(double(r.idle_ns))},
                                  {"idle_share", share_json(r.idle_share)},
                                  {"host_wait_us", us_json(double(r.host_wait_ns))},
                                  {"kernel_wait_us", us_json(double(r.kernel_wait_ns))},
                                  {"other_us", us_json(double(r.other_ns))}});
  }
  return t;
}

GpuTable breakdown_table(const std::vector<report::BreakdownRow>& rows) {
  GpuTable t;
  t.headers = {"Device", "Step", "Span (us)", "Compute (%)", "Non-compute (%)", "Idle (%)", "Compute (us)",
               "Non-compute (us)", "Idle (us)"};
  for (const report::BreakdownRow& r : rows) {
    double span = r.span_ns > 0 ? double(r.span_ns) : 1;
    std::string step = r.step ? (r.step->mode == Mode::global ? std::to_string(r.step->step)
                                                              : fmt::format("{} {}", to_string(r.step->mode), r.step->step))
                              : "all";
    t.rows.push_back({std::to_string(r.device), step, us_text(double(r.span_ns)), percent_text(double(r.compute_ns) / span),
                      percent_text(double(r.non_compute_ns) / span), percent_text(double(r.idle_ns) / span),
                      us_text(double(r.compute_ns)), us_text(double(r.non_compute_ns)), us_text(double(r.idle_ns))});
    ordered_json j{{"device", r.device}};
    if (r.step) {
      j["step"] = r.step->step;
      j["mode"] = to_string(r.step->mode);
    }
    j["span_us"] = us_json(double(r.span_ns));
    j["compute_us"] = us_json(double(r.compute_ns));
    j["non_compute_us"] = us_json(double(r.non_compute_ns));
    j["idle_us"] = us_json(double(r.idle_ns));
    j["compute_share"] = share_json(double(r.compute_ns) / span);
    j["non_compute_share"] = share_json(double(r.non_compute_ns) / span);
    j["idle_share"] = share_json(double(r.idle_ns) / span);
    t.json.push_back(std::move(j));
  }
  return t;
}

GpuTable launch_table(const std::vector<report::LaunchSummary>& rows, const report::LaunchOptions& options) {
  GpuTable t;
  t.headers = {"Device", "Kernels", "Launches", "Delay avg (us)", "Delay med (us)", "Delay p95 (us)", "Delay p99 (us)",
               "Delay max (us)", "Short <10us (%)", fmt::format("Launch >{:g}us", double(options.runtime_cutoff_ns) / 1000.0),
               fmt::format("Delay >{:g}us", double(options.launch_delay_cutoff_ns) / 1000.0), "GPU<CPU"};
  for (const report::LaunchSummary& r : rows) {
    double short_share = r.kernels > 0 ? double(r.short_kernels) / double(r.kernels) : 0;
    t.rows.push_back({std::to_string(r.device), std::to_string(r.kernels), std::to_string(r.launches), us_text(r.delay.avg_ns),
                      us_text(r.delay.median_ns), us_text(r.p95_delay_ns), us_text(r.p99_delay_ns),
                      us_text(double(r.delay.max_ns)), percent_text(short_share), std::to_string(r.long_launches),
                      std::to_string(r.long_delays), std::to_string(r.gpu_shorter_than_cpu)});
    ordered_json outliers = ordered_json::array();
    for (const report::LaunchOutlier& o : r.outliers) {
      outliers.push_back(ordered_json{{"kernel", o.kernel},
                                      {"api", o.api},
                                      {"correlation", o.correlation},
                                      {"tid", o.tid},
                                      {"launch_us", us_json(double(o.launch_ns))},
                                      {"delay_us", us_json(double(o.delay_ns))},
                                      {"kernel_us", us_json(double(o.kernel_ns))}});
    }
    t.json.push_back(ordered_json{{"device", r.device},
                                  {"kernels", r.kernels},
                                  {"unmatched_kernels", r.unmatched_kernels},
                                  {"launches", r.launches},
                                  {"delay_avg_us", us_json(r.delay.avg_ns)},
                                  {"delay_median_us", us_json(r.delay.median_ns)},
                                  {"delay_p95_us", us_json(r.p95_delay_ns)},
                                  {"delay_p99_us", us_json(r.p99_delay_ns)},
                                  {"delay_max_us", us_json(double(r.delay.max_ns))},
                                  {"short_kernels", r.short_kernels},
                                  {"short_kernel_share", share_json(short_share)},
                                  {"long_launches", r.long_launches},
                                  {"long_delays", r.long_delays},
                                  {"gpu_shorter_than_cpu", r.gpu_shorter_than_cpu},
                                  {"outliers", std::move(outliers)}});
  }
  return t;
}

GpuTable overlap_table(const std::vector<report::OverlapRow>& rows) {
  GpuTable t;
  t.headers = {"Device", "Communication (us)", "Computation (us)", "Overlapped (us)", "Overlap (%)"};
  for (const report::OverlapRow& r : rows) {
    t.rows.push_back({std::to_string(r.device), us_text(double(r.communication_ns)), us_text(double(r.computation_ns)),
                      us_text(double(r.overlapped_ns)), percent_text(r.overlap_share)});
    t.json.push_back(ordered_json{{"device", r.device},
                                  {"communication_us", us_json(double(r.communication_ns))},
                                  {"computation_us", us_json(double(r.computation_ns))},
                                  {"overlapped_us", us_json(double(r.overlapped_ns))},
                                  {"overlap_share", share_json(r.overlap_share)}});
  }
  return t;
}

GpuTable callsites_table(const std::vector<report::CallSite>& rows) {
  GpuTable t;
  t.headers = {"GPU (%)", "GPU time (us)", "Kernels", "Copies", "Launches", "Call site"};
  for (const report::CallSite& r : rows) {
    std::string where = r.file.empty() ? fmt::format("(unattributed: {})", r.why_unattributed)
                                       : fmt::format("{} ({}:{})", r.function, r.file, r.line);
    t.rows.push_back({percent_text(r.share), us_text(double(r.gpu_ns)), std::to_string(r.kernels), std::to_string(r.copies),
                      std::to_string(r.launches), where});
    ordered_json kernels = ordered_json::array();
    for (const report::CallSiteKernel& k : r.top_kernels) {
      t.rows.push_back({"", us_text(double(k.total_ns)), std::to_string(k.count), "", "", "    " + k.name});
      kernels.push_back(ordered_json{{"name", k.name}, {"total_us", us_json(double(k.total_ns))}, {"instances", k.count}});
    }
    ordered_json j;
    if (r.file.empty()) {
      j["file"] = nullptr;
      j["unattributed"] = r.why_unattributed;
    } else {
      j["file"] = r.file;
      j["line"] = r.line;
      j["function"] = r.function;
    }
    j["gpu_us"] = us_json(double(r.gpu_ns));
    j["share"] = share_json(r.share);
    j["kernels"] = r.kernels;
    j["copies"] = r.copies;
    j["launches"] = r.launches;
    j["top_kernels"] = std::move(kernels);
    t.json.push_back(std::move(j));
  }
  return t;
}

std::string gpu_trace_header(const store::GpuTrace& trace) {
  std::string out;
  for (const store::GpuDevice& d : trace.devices) {
    // Traces list every GPU of the machine; the header names the ones that did work.
    bool used = std::any_of(trace.ops.begin(), trace.ops.end(), [&](const store::GpuOp& op) { return op.device == d.id; });
    if (!used) continue;
    out += fmt::format("GPU {}: {}", d.id, d.name.empty() ? "(unnamed)" : d.name);
    if (d.sm_count > 0) out += fmt::format(", {} SMs", d.sm_count);
    if (d.global_memory_bytes > 0) out += fmt::format(", {}", bytes_text(d.global_memory_bytes));
    if (d.compute_major > 0) out += fmt::format(", compute {}.{}", d.compute_major, d.compute_minor);
    out += '\n';
  }
  for (const store::GpuProcess& p : trace.processes) {
    if (p.rank >= 0) out += fmt::format("pid {}: rank {}{}\n", p.pid, p.rank, p.world_size > 0 ? fmt::format(" of {}", p.world_size) : "");
    if (p.dropped_records > 0 || p.untimed_records > 0) {
      out += fmt::format("pid {}: CUPTI dropped {} record(s), {} without timestamps\n", p.pid, p.dropped_records, p.untimed_records);
    }
  }
  return out;
}

}  // namespace sprof::render
