// sprof diff -o diff.html: the tables as HTML and the differential flame graph, one offline page.

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "render/diff_format.hpp"
#include "render/page_text.hpp"
#include "render/report_assets.hpp"
#include "sprof/diff_render.hpp"
#include "sprof/markup.hpp"

namespace sprof::render {
namespace {

using nlohmann::ordered_json;

// µs per step, to the ns: the page draws and labels, it needs no more digits.
double us(double seconds) { return std::round(seconds * 1e9) / 1e3; }

ordered_json flame_json(const report::FlameDiffNode& n) {
  ordered_json j{{"name", n.name}, {"base_us", us(n.base_s)}, {"new_us", us(n.new_s)}};
  if (!n.children.empty()) {
    ordered_json children = ordered_json::array();
    for (const auto& c : n.children) children.push_back(flame_json(c));
    j["children"] = std::move(children);
  }
  return j;
}

class Html {
 public:
  explicit Html(std::string& out) : out_(out) {}
  void text(std::string_view t) { append_markup_escaped(out_, t); }
  void raw(std::string_view t) { out_ += t; }
  // A table: headers, then rows of cells; a cell's class "grew" or "shrank" colours it.
  void table(const std::vector<std::string>& headers, const std::vector<std::vector<std::pair<std::string, std::string>>>& rows,
             const std::string& id) {
    raw("<table id=\"" + id + "\"><tr>");
    for (const auto& h : headers) {
      raw("<th>");
      text(h);
      raw("</th>");
    }
    raw("</tr>\n");
    for (const auto& row : rows) {
      raw("<tr>");
      for (const auto& [cell, cls] : row) {
        raw(cls.empty() ? "<td>" : "<td class=\"" + cls + "\">");
        text(cell);
        raw("</td>");
      }
      raw("</tr>\n");
    }
    raw("</table>\n");
  }

 private:
  std::string& out_;
};

std::string change_class(const report::ConfidenceInterval& ci) { return ci.lo > 0 ? "grew" : ci.hi < 0 ? "shrank" : ""; }

}  // namespace

std::string diff_html(const report::ProfileDiff& diff, const std::vector<report::Regression>& regressions, size_t top) {
  std::string out;
  Html h(out);
  const std::string title = "sprof diff: " + diff.base.path + " → " + diff.next.path;
  h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
  h.text(title);
  h.raw("</title>\n<style>\n");
  h.raw(assets::flamegraph_css);
  h.raw("\n");
  h.raw(assets::page_css);
  h.raw("\ntd.grew { color: #b00; font-weight: 600; }\ntd.shrank { color: #06c; font-weight: 600; }\n</style>\n<script>\n");
  h.raw(assets::d3_js);
  h.raw("\n</script>\n<script>\n");
  h.raw(assets::flamegraph_js);
  h.raw("\n</script>\n</head>\n<body>\n<h1>");
  h.text(title);
  h.raw("</h1>\n<p>");
  h.text(fmt::format("{} steps. BASE {}; NEW {}. Changes are NEW − BASE with their {:.0f} % interval; red: grew, blue: "
                     "shrank (the interval excludes zero).", to_string(diff.mode), side_text(diff.base), side_text(diff.next),
                     diff.confidence * 100));
  h.raw("</p>\n");

  h.raw("<section id=\"regressions\"><h2>Regressions</h2>\n");
  if (regressions.empty()) {
    h.raw("<p class=\"note\">None beyond the thresholds asked for (--fail-on-regression, --threshold).</p>\n");
  } else {
    std::vector<std::vector<std::pair<std::string, std::string>>> rows;
    for (const report::Regression& r : regressions) {
      rows.push_back({{r.kind, ""}, {r.what, ""}, {pct_text(r.change_pct), "grew"}, {fmt::format("{:.1f} %", r.threshold_pct), ""},
                      {interval_text(r.interval_s), ""}});
    }
    h.table({"KIND", "WHAT", "CHANGE", "THRESHOLD", "INTERVAL"}, rows, "regression-table");
  }
  h.raw("</section>\n<section id=\"steps\"><h2>Step time</h2>\n");
  if (diff.steps.empty()) {
    h.raw("<p class=\"note\">");
    h.text(diff.steps_note);
    h.raw("</p>\n");
  } else {
    std::vector<std::vector<std::pair<std::string, std::string>>> rows;
    for (const report::DistributionChange& d : diff.steps) {
      rows.push_back({{d.metric, ""},
                      {seconds_text(d.base_median_s), ""},
                      {seconds_text(d.new_median_s), ""},
                      {signed_seconds(d.change_s) + " (" + pct_text(d.change_pct) + ")", change_class(d.interval_s)},
                      {interval_text(d.interval_s), ""},
                      {d.p_value < 0.001 ? "<0.001" : fmt::format("{:.3f}", d.p_value), ""},
                      {fmt::format("{} / {}", d.base_count, d.new_count), ""}});
    }
    h.table({"METRIC", "BASE MEDIAN", "NEW MEDIAN", "CHANGE", "INTERVAL", "P", "STEPS"}, rows, "step-table");
  }
  h.raw("</section>\n<section id=\"flame\"><h2>Differential flame graph</h2>\n");
  if (diff.flame.children.empty()) {
    h.raw("<p class=\"note\">");
    h.text(diff.functions_note.empty() ? "No sample fell in the selected steps." : diff.functions_note);
    h.raw("</p>\n");
  } else {
    h.raw("<p class=\"note\">The step threads' stacks per step; a frame's colour is its time per step NEW − BASE, "
          "red where it grew and blue where it shrank, the deepest for the largest change of any frame. Click to zoom.</p>\n"
          "<div class=\"controls\"><label>Widths from <select id=\"flame-width\"><option value=\"new\">NEW</option>"
          "<option value=\"base\">BASE (shows what vanished)</option></select></label></div>\n"
          "<div id=\"flame-chart\"></div>\n<div id=\"flame-details\" class=\"note\"></div>\n");
  }
  h.raw("</section>\n<section id=\"functions\"><h2>Functions by self time per step</h2>\n");
  if (!diff.functions_note.empty()) {
    h.raw("<p class=\"note\">");
    h.text(diff.functions_note);
    h.raw("</p>\n");
  } else {
    std::vector<std::vector<std::pair<std::string, std::string>>> rows;
    for (const report::FunctionChange& f : diff.functions) {
      if (rows.size() == top) break;
      if (f.base_self_s <= 0 && f.new_self_s <= 0) continue;
      std::string name = f.name + " (" + f.file + ":" + std::to_string(f.line) + ")";
      if (!f.status.empty()) name += " [" + f.status + "]";
      rows.push_back({{signed_seconds(f.change_s), change_class(f.interval_s)},
                      {pct_text(f.change_pct_of_step), ""},
                      {interval_text(f.interval_s), ""},
                      {seconds_text(f.base_self_s), ""},
                      {seconds_text(f.new_self_s), ""},
                      {seconds_text(f.base_total_s) + " → " + seconds_text(f.new_total_s), ""},
                      {name, ""}});
    }
    h.table({"CHANGE", "OF STEP", "INTERVAL", "BASE", "NEW", "TOTAL", "FUNCTION"}, rows, "function-table");
  }
  h.raw("</section>\n<section id=\"gpu\"><h2>GPU kernels by time per step</h2>\n");
  if (!diff.gpu.present) {
    h.raw("<p class=\"note\">");
    h.text(diff.gpu.note);
    h.raw("</p>\n");
  } else {
    std::vector<std::vector<std::pair<std::string, std::string>>> rows;
    for (const report::KernelChange& k : diff.gpu.kernels) {
      if (rows.size() == top) break;
      rows.push_back({{signed_seconds(k.change_s), change_class(k.interval_s)},
                      {pct_text(k.change_pct), ""},
                      {interval_text(k.interval_s), ""},
                      {seconds_text(k.base_s), ""},
                      {seconds_text(k.new_s), ""},
                      {fmt::format("{:.1f} → {:.1f}", k.base_count, k.new_count), ""},
                      {k.status.empty() ? k.name : k.name + " [" + k.status + "]", ""}});
    }
    h.table({"CHANGE", "OF KERNELS", "INTERVAL", "BASE", "NEW", "LAUNCHES/STEP", "KERNEL"}, rows, "kernel-table");
  }
  h.raw("</section>\n<script type=\"application/json\" id=\"sprof-diff-data\">");
  ordered_json data{{"flame", diff.flame.children.empty() ? ordered_json(nullptr) : flame_json(diff.flame)}};
  h.raw(json_script_safe(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  h.raw("</script>\n<script>\n");
  h.raw(script_safe(assets::diff_page_js));
  h.raw("\n</script>\n</body>\n</html>\n");
  return out;
}

}  // namespace sprof::render
