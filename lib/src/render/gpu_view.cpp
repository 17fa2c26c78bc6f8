// sprof gpu VIEW: the view's table from the report's summaries, and its JSON and text forms.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sprof/gpu_render.hpp"
#include "sprof/text_table.hpp"

namespace sprof::render {

Result<GpuTable> gpu_view_table(const report::GpuInput& input, const report::GpuSelection& s,
                                const GpuViewOptions& options, const std::string& path) {
  const std::string& view = options.view;
  if (view == "idle" || view == "launch" || view == "callsites") {
    if (int64_t repeats = report::duplicated_correlations(input.trace); repeats > 0) {
      spdlog::warn("{}: {} launch call(s) repeat another's correlation id in the same process; each GPU op is tied to "
                   "the latest of them that began before it", path, repeats);
    }
  }
  GpuTable table;
  if (view == "kernels") {
    table = kernels_table(report::kernel_summary(input, s));
  } else if (view == "memcpy") {
    table = memory_table(report::memory_summary(input, s));
  } else if (view == "api") {
    table = api_table(report::api_summary(input, s));
  } else if (view == "idle") {
    table = idle_table(report::idle_breakdown(input, s, options.kernel_wait_ns));
  } else if (view == "breakdown") {
    if (options.per_step && input.steps.empty()) return make_error(ErrorKind::usage, "--per-step: {} has no steps", path);
    table = breakdown_table(report::temporal_breakdown(input, s, options.per_step));
  } else if (view == "launch") {
    report::LaunchOptions launch = options.launch;
    launch.outliers = options.limit > 0 ? options.limit : 10;
    return launch_table(report::launch_summary(input, s, launch), launch);  // --limit: outliers
  } else if (view == "callsites") {
    SPROF_TRY(auto sites, report::call_sites(input, s, options.call_sites));
    if (options.limit > 0 && sites.size() > options.limit) sites.resize(options.limit);
    return callsites_table(sites);  // --limit: sites, each with its kernels
  } else if (view == "overlap") {
    table = overlap_table(report::overlap_summary(input, s));
  } else {
    return make_error(ErrorKind::usage, "unknown GPU view {} (one of {})", view, fmt::join(kGpuViews, ", "));
  }
  if (options.limit > 0 && table.rows.size() > options.limit) {
    table.rows.resize(options.limit);
    table.json.erase(table.json.begin() + std::ptrdiff_t(options.limit), table.json.end());
  }
  return table;
}

void add_gpu_view_json(const report::GpuInput& input, const std::string& path, const std::string& view, GpuTable table,
                       nlohmann::ordered_json& doc) {
  doc["path"] = path;
  doc["view"] = view;
  doc["clock"] = input.trace.clock;
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const auto& d : input.trace.devices) {
    devices.push_back(nlohmann::ordered_json{{"id", d.id}, {"name", d.name}, {"uuid", d.uuid}, {"sm_count", d.sm_count},
                                             {"global_memory_bytes", d.global_memory_bytes}});
  }
  doc["devices"] = std::move(devices);
  doc["rows"] = std::move(table.json);
}

std::string gpu_view_csv(const GpuTable& table) {
  std::string out = csv_line(table.headers);
  for (const auto& row : table.rows) out += csv_line(row);
  return out;
}

std::string gpu_view_text(const report::GpuInput& input, const std::string& view, GpuTable table, bool color,
                          size_t width) {
  if (table.rows.empty()) return fmt::format("no GPU {} in the selection\n", view == "api" ? "API calls" : "work");
  TextTable text(table.headers);
  for (auto& row : table.rows) {
    std::vector<TableCell> cells;
    for (auto& cell : row) cells.push_back({std::move(cell), ""});
    text.add_row(std::move(cells));
  }
  return gpu_trace_header(input.trace) + text.render(color, width);
}

}  // namespace sprof::render
