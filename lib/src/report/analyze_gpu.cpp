// analyze's GPU section: the `sprof gpu` views that answer "is the GPU busy, with what, launched
// from where", over the whole run.

#include <map>

#include "report/analyze_parts.hpp"
#include "sprof/gpu_report.hpp"

namespace sprof::report {

GpuSummary summarize_gpu(const GpuInput& input, const AnalyzeOptions& options) {
  GpuSummary out;
  out.present = true;
  for (const store::GpuOp& op : input.trace.ops) {
    const double s = static_cast<double>(op.duration_ns()) / 1e9;
    if (op.kind == store::GpuOpKind::kernel) {
      ++out.kernels;
      out.kernel_s += s;
    } else {
      ++out.copies;
      out.copy_s += s;
    }
  }
  const GpuSelection all;
  std::map<int32_t, std::string> names;
  for (const store::GpuDevice& d : input.trace.devices) names.emplace(d.id, d.name);
  for (const BreakdownRow& b : temporal_breakdown(input, all, false)) {
    GpuDeviceUsage u;
    u.device = b.device;
    if (auto it = names.find(b.device); it != names.end()) u.name = it->second;
    u.span_s = static_cast<double>(b.span_ns) / 1e9;
    if (b.span_ns > 0) {
      const double span = static_cast<double>(b.span_ns);
      u.compute_share = static_cast<double>(b.compute_ns) / span;
      u.non_compute_share = static_cast<double>(b.non_compute_ns) / span;
      u.idle_share = static_cast<double>(b.idle_ns) / span;
    }
    out.devices.push_back(std::move(u));
  }
  for (const KernelSummary& k : kernel_summary(input, all)) {
    if (out.top_kernels.size() >= options.gpu_kernels) break;
    out.top_kernels.push_back({k.name, k.time.count, static_cast<double>(k.time.total_ns) / 1e9, k.time.avg_ns / 1e3,
                               k.share});
  }
  auto sites = call_sites(input, all, CallSiteOptions{});
  if (!sites.ok()) {
    out.call_sites_note = sites.error().message;
    return out;
  }
  for (const CallSite& c : *sites) {
    if (out.call_sites.size() >= options.gpu_call_sites) break;
    GpuCallSiteRow row;
    row.attributed = !c.file.empty();
    row.site = row.attributed ? fmt::format("{}:{} {}", c.file, c.line, c.function) : "(" + c.why_unattributed + ")";
    row.gpu_s = static_cast<double>(c.gpu_ns) / 1e9;
    row.share = c.share;
    row.kernels = c.kernels;
    if (!c.top_kernels.empty()) row.top_kernel = c.top_kernels.front().name;
    out.call_sites.push_back(std::move(row));
  }
  if (out.call_sites.empty()) out.call_sites_note = "no GPU work in the selection";
  return out;
}

}  // namespace sprof::report
