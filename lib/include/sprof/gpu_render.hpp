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

}  // namespace sprof::render
