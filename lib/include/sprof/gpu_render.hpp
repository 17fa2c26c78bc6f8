#pragma once
// The GPU views, rendered: each view as one table (header + rows of text) and one JSON array with
// numeric fields (times in µs as `*_us`, shares as fractions 0..1), from which the command prints
// a text table, CSV or JSON.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/gpu_report.hpp"

namespace sprof::render {

struct GpuTable {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;  // text cells, as the table and CSV show them
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
};

GpuTable kernels_table(const std::vector<report::KernelSummary>& rows);
GpuTable memory_table(const std::vector<report::MemorySummary>& rows);
GpuTable api_table(const std::vector<report::ApiSummary>& rows);
GpuTable idle_table(const std::vector<report::IdleRow>& rows);
GpuTable breakdown_table(const std::vector<report::BreakdownRow>& rows);
// Per device; outliers listed in the JSON, and as rows below the summary in the table.
GpuTable launch_table(const std::vector<report::LaunchSummary>& rows, const report::LaunchOptions& options);
GpuTable overlap_table(const std::vector<report::OverlapRow>& rows);
// Call sites; the top kernels beneath each follow it as indented rows in the table.
GpuTable callsites_table(const std::vector<report::CallSite>& rows);

// A header block for a GPU view: devices (name, SMs, memory), processes (rank), trace span.
std::string gpu_trace_header(const store::GpuTrace& trace);

// `sprof gpu VIEW`: which view and its knobs.
inline const std::vector<std::string> kGpuViews = {"kernels", "memcpy", "api",    "idle",
                                                   "breakdown", "launch", "overlap", "callsites"};
struct GpuViewOptions {
  std::string view;  // one of kGpuViews
  bool per_step = false;                 // breakdown: per device and step
  size_t limit = 0;                      // at most this many rows (launch: outliers per device, 10 when 0)
  int64_t kernel_wait_ns = 30'000;       // idle: shorter gaps are kernel wait
  report::LaunchOptions launch;          // launch (its `outliers` is set from `limit`)
  report::CallSiteOptions call_sites;    // callsites
};
// The view's table of `input`'s work in `selection`, `limit` applied (the views sort by what
// matters most; callsites keep that many sites, each with its kernels). A view that needs steps
// or samples the input lacks is a usage error naming `path`. The views that tie ops to their
// launch calls warn when a correlation id repeats (report::duplicated_correlations).
Result<GpuTable> gpu_view_table(const report::GpuInput& input, const report::GpuSelection& selection,
                                const GpuViewOptions& options, const std::string& path);
// The view as the JSON document's fields: path, view, clock, devices, rows.
void add_gpu_view_json(const report::GpuInput& input, const std::string& path, const std::string& view, GpuTable table,
                       nlohmann::ordered_json& doc);
// The view as text: the trace's header and the table fitted to `width` columns (0: no limit), or
// a line saying the selection holds no work.
std::string gpu_view_text(const report::GpuInput& input, const std::string& view, GpuTable table, bool color,
                          size_t width);
// The view as CSV: the header line, then a line per row, cells as the table shows them.
std::string gpu_view_csv(const GpuTable& table);

}  // namespace sprof::render
