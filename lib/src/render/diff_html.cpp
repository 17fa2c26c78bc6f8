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
  // A table; a cell that grew or shrank gets that class (the page's style colours it).
  void table(const DiffTable& t, const std::string& id) {
    raw("<table id=\"" + id + "\"><tr>");
    for (const auto& h : t.headers) {
      raw("<th>");
      text(h);
      raw("</th>");
    }
    raw("</tr>\n");
    for (const auto& row : t.rows) {
      raw("<tr>");
      for (const DiffCell& cell : row) {
        raw(cell.trend == Trend::grew ? "<td class=\"grew\">" : cell.trend == Trend::shrank ? "<td class=\"shrank\">" : "<td>");
        text(cell.text);
        raw("</td>");
      }
      raw("</tr>\n");
    }
    raw("</table>\n");
  }
  void note(std::string_view t) {
    raw("<p class=\"note\">");
    text(t);
    raw("</p>\n");
  }

 private:
  std::string& out_;
};

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
    h.note("None beyond the thresholds asked for (--fail-on-regression, --threshold).");
  } else {
    DiffTable t{{"KIND", "WHAT", "CHANGE", "THRESHOLD", "INTERVAL"}, {}, 0};
    for (const report::Regression& r : regressions) {
      t.rows.push_back({{r.kind}, {r.what}, {pct_text(r.change_pct), Trend::grew}, {fmt::format("{:.1f} %", r.threshold_pct)},
                        {interval_text(r.interval_s)}});
    }
    h.table(t, "regression-table");
  }
  h.raw("</section>\n<section id=\"steps\"><h2>Step time</h2>\n");
  if (diff.steps.empty()) {
    h.note(diff.steps_note);
  } else {
    h.table(step_table(diff), "step-table");
  }
  h.raw("</section>\n<section id=\"flame\"><h2>Differential flame graph</h2>\n");
  if (diff.flame.children.empty()) {
    h.note(diff.functions_note.empty() ? "No sample fell in the selected steps." : diff.functions_note);
  } else {
    h.raw("<p class=\"note\">The step threads' stacks per step; a frame's colour is its time per step NEW − BASE, "
          "red where it grew and blue where it shrank, the deepest for the largest change of any frame. Click to zoom.</p>\n"
          "<div class=\"controls\"><label>Widths from <select id=\"flame-width\"><option value=\"new\">NEW</option>"
          "<option value=\"base\">BASE (shows what vanished)</option></select></label></div>\n"
          "<div id=\"flame-chart\"></div>\n<div id=\"flame-details\" class=\"note\"></div>\n");
  }
  h.raw("</section>\n<section id=\"functions\"><h2>Functions by self time per step</h2>\n");
  if (!diff.functions_note.empty()) {
    h.note(diff.functions_note);
  } else {
    h.table(function_table(diff, false, top), "function-table");
    h.raw("<h3>By total time per step (with what they called)</h3>\n");
    h.table(function_table(diff, true, top), "function-total-table");
  }
  h.raw("</section>\n<section id=\"gpu\"><h2>GPU kernels by time per step</h2>\n");
  if (!diff.gpu.present) {
    h.note(diff.gpu.note);
  } else {
    h.table(kernel_table(diff.gpu, top), "kernel-table");
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
