// sprof diff as text and JSON.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "render/diff_format.hpp"
#include "sprof/diff_render.hpp"
#include "sprof/text_table.hpp"

namespace sprof::render {
namespace {

using nlohmann::ordered_json;

double finite(double x) { return std::isfinite(x) ? x : 0; }

// Red when it grew, green when it shrank.
std::string text_table(const DiffTable& table, bool color, size_t width) {
  TextTable t(table.headers);
  for (const auto& row : table.rows) {
    std::vector<TableCell> cells;
    for (const DiffCell& c : row) cells.push_back({c.text, c.trend == Trend::grew ? "31" : c.trend == Trend::shrank ? "32" : ""});
    t.add_row(std::move(cells));
  }
  std::string out = t.render(color, width);
  if (table.more > 0) out += fmt::format("  ({} more; --top N, or --json for all)\n", table.more);
  return out;
}
ordered_json interval_json(const report::ConfidenceInterval& ci) {
  if (!std::isfinite(ci.lo) || !std::isfinite(ci.hi)) return nullptr;
  return ordered_json::array({ci.lo, ci.hi});
}

}  // namespace

std::string diff_text(const report::ProfileDiff& diff, const std::vector<report::Regression>& regressions, size_t top,
                      bool color, size_t width) {
  std::string out;
  int confidence = int(std::lround(diff.confidence * 100));
  const bool traces = diff.base.trace_file && diff.next.trace_file;
  fmt::format_to(std::back_inserter(out), "{} of\n  BASE {}\n  NEW  {}\n",
                 traces ? std::string("GPU work per ProfilerStep#") : fmt::format("{} steps", to_string(diff.mode)),
                 side_text(diff.base), side_text(diff.next));
  fmt::format_to(std::back_inserter(out), "Changes are NEW - BASE with their {} % interval; red: grew, green: shrank "
                 "(the interval excludes zero).\n", confidence);

  out += "\nStep time (medians; interval by bootstrap, p by Mann–Whitney)\n";
  if (diff.steps.empty()) {
    out += "  (" + diff.steps_note + ")\n";
  } else {
    out += text_table(step_table(diff), color, width);
  }

  fmt::format_to(std::back_inserter(out), "\nFunctions by self time per step ({}; interval over steps)\n", diff.time_view);
  if (!diff.functions_note.empty()) {
    out += "  (" + diff.functions_note + ")\n";
  } else {
    fmt::format_to(std::back_inserter(out), "  sampled per step: BASE {}, NEW {}\n", seconds_text(diff.base.sampled_s_per_step),
                   seconds_text(diff.next.sampled_s_per_step));
    out += text_table(function_table(diff, false, top), color, width);
    out += "\nFunctions by total time per step (with what they called)\n";
    out += text_table(function_table(diff, true, top), color, width);
  }

  out += "\nGPU kernels by time per step\n";
  if (!diff.gpu.present) {
    out += "  (" + diff.gpu.note + ")\n";
  } else {
    const report::GpuDiff& g = diff.gpu;
    fmt::format_to(std::back_inserter(out), "  kernel time per step {} → {}; GPU idle {:.1f} % → {:.1f} %; median launch delay "
                   "{:.1f} → {:.1f} µs\n", seconds_text(g.base_kernel_s), seconds_text(g.new_kernel_s),
                   g.base_idle_share * 100, g.new_idle_share * 100, g.base_launch_delay_us, g.new_launch_delay_us);
    out += text_table(kernel_table(g, top), color, width);
  }

  if (!diff.system.empty()) {
    out += "\nSystem metrics (means)\n";
    TextTable t({"MACHINE", "METRIC", "BASE", "NEW", "UNIT"});
    for (const report::SystemMetricChange& m : diff.system) {
      t.add_row({{m.machine, ""}, {m.metric, ""}, {fmt::format("{:.4g}", m.base_mean), ""}, {fmt::format("{:.4g}", m.new_mean), ""}, {m.unit, ""}});
    }
    out += t.render(color, width);
  }
  if (!diff.rules.empty()) {
    out += "\nRule verdicts that changed\n";
    for (const report::RuleChange& r : diff.rules) {
      fmt::format_to(std::back_inserter(out), "  {}: {} → {}\n", r.rule, r.base_status.empty() ? "(absent)" : r.base_status,
                     r.new_status.empty() ? "(absent)" : r.new_status);
    }
  }
  for (const std::string& w : diff.warnings) out += "warning: " + w + "\n";
  if (!regressions.empty()) {
    out += "\nRegressions beyond their thresholds (interval above zero)\n";
    for (const report::Regression& r : regressions) {
      fmt::format_to(std::back_inserter(out), "  {} {}: {} > {:.1f} %, interval {}\n", r.kind, r.what, pct_text(r.change_pct),
                     r.threshold_pct, interval_text(r.interval_s));
    }
  }
  return out;
}

std::string diff_json(const report::ProfileDiff& diff, const std::vector<report::Regression>& regressions) {
  ordered_json j;
  auto side = [](const report::DiffSide& s) {
    return ordered_json{{"path", s.path},
                        {"trace_file", s.trace_file},
                        {"steps", s.steps},
                        {"first_step", s.first_step},
                        {"last_step", s.last_step},
                        {"partial_steps", s.partial_steps},
                        {"has_samples", s.has_samples},
                        {"sampled_s_per_step", s.sampled_s_per_step},
                        {"has_gpu", s.has_gpu}};
  };
  j["base"] = side(diff.base);
  j["new"] = side(diff.next);
  j["mode"] = std::string(to_string(diff.mode));
  j["confidence"] = diff.confidence;
  ordered_json steps = ordered_json::array();
  for (const report::DistributionChange& d : diff.steps) {
    steps.push_back({{"metric", d.metric},
                     {"base_count", d.base_count},
                     {"new_count", d.new_count},
                     {"base_median_s", d.base_median_s},
                     {"new_median_s", d.new_median_s},
                     {"base_p90_s", d.base_p90_s},
                     {"new_p90_s", d.new_p90_s},
                     {"change_s", d.change_s},
                     {"change_pct", d.change_pct},
                     {"interval_s", interval_json(d.interval_s)},
                     {"p_value", d.p_value}});
  }
  j["steps"] = steps;
  if (!diff.steps_note.empty()) j["steps_note"] = diff.steps_note;
  j["time_view"] = diff.time_view;
  ordered_json functions = ordered_json::array();
  for (const report::FunctionChange& f : diff.functions) {
    functions.push_back({{"name", f.name},
                         {"file", f.file},
                         {"line", f.line},
                         {"status", f.status},
                         {"base_self_s", f.base_self_s},
                         {"new_self_s", f.new_self_s},
                         {"base_total_s", f.base_total_s},
                         {"new_total_s", f.new_total_s},
                         {"base_share", f.base_share},
                         {"new_share", f.new_share},
                         {"change_s", f.change_s},
                         {"interval_s", interval_json(f.interval_s)},
                         {"change_pct_of_step", finite(f.change_pct_of_step)},
                         {"total_change_s", f.total_change_s},
                         {"total_interval_s", interval_json(f.total_interval_s)}});
  }
  j["functions"] = functions;
  if (!diff.functions_note.empty()) j["functions_note"] = diff.functions_note;
  ordered_json gpu{{"present", diff.gpu.present}};
  if (!diff.gpu.present) {
    gpu["note"] = diff.gpu.note;
  } else {
    const report::GpuDiff& g = diff.gpu;
    gpu["base_kernel_s"] = g.base_kernel_s;
    gpu["new_kernel_s"] = g.new_kernel_s;
    gpu["base_idle_share"] = g.base_idle_share;
    gpu["new_idle_share"] = g.new_idle_share;
    gpu["base_launch_delay_us"] = g.base_launch_delay_us;
    gpu["new_launch_delay_us"] = g.new_launch_delay_us;
    ordered_json kernels = ordered_json::array();
    for (const report::KernelChange& k : g.kernels) {
      kernels.push_back({{"name", k.name},
                         {"status", k.status},
                         {"base_s", k.base_s},
                         {"new_s", k.new_s},
                         {"base_launches_per_step", k.base_count},
                         {"new_launches_per_step", k.new_count},
                         {"change_s", k.change_s},
                         {"interval_s", interval_json(k.interval_s)},
                         {"change_pct", k.change_pct}});
    }
    gpu["kernels"] = kernels;
  }
  j["gpu"] = gpu;
  ordered_json system = ordered_json::array();
  for (const report::SystemMetricChange& m : diff.system) {
    system.push_back({{"machine", m.machine}, {"metric", m.metric}, {"unit", m.unit}, {"base_mean", m.base_mean}, {"new_mean", m.new_mean}});
  }
  j["system"] = system;
  ordered_json rules = ordered_json::array();
  for (const report::RuleChange& r : diff.rules) rules.push_back({{"rule", r.rule}, {"base", r.base_status}, {"new", r.new_status}});
  j["rules"] = rules;
  ordered_json found = ordered_json::array();
  for (const report::Regression& r : regressions) {
    found.push_back({{"kind", r.kind},
                     {"what", r.what},
                     {"change_pct", r.change_pct},
                     {"threshold_pct", r.threshold_pct},
                     {"interval_s", interval_json(r.interval_s)}});
  }
  j["regressions"] = found;
  j["warnings"] = diff.warnings;
  return j.dump(2) + "\n";
}

}  // namespace sprof::render
