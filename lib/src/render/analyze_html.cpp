// The HTML report: one page, everything inlined (vendored viewers, the page's script and style,
// the data as JSON), so that it opens from disk with no network.

#include <cmath>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "render/page_text.hpp"
#include "render/report_assets.hpp"
#include "sprof/analyze_render.hpp"
#include "sprof/file_bytes.hpp"
#include "sprof/markup.hpp"

namespace sprof::render {

namespace {

using nlohmann::ordered_json;

ordered_json flame_json(const report::FlameNode& n) {
  ordered_json j;
  j["name"] = n.name;
  j["value"] = n.value;
  if (!n.children.empty()) {
    ordered_json children = ordered_json::array();
    for (const auto& c : n.children) children.push_back(flame_json(c));
    j["children"] = std::move(children);
  }
  return j;
}

// Rows of flat [start_s, end_s, name, idle, ...] quadruples, times to the microsecond: compact
// for the tens of thousands of spans a long run has.
ordered_json timeline_json(const report::Timeline& timeline) {
  ordered_json rows = ordered_json::array();
  for (const auto& row : timeline.rows) {
    ordered_json spans = ordered_json::array();
    for (const auto& s : row.segments) {
      spans.push_back(std::round(s.start_s * 1e6) / 1e6);
      spans.push_back(std::round(s.end_s * 1e6) / 1e6);
      spans.push_back(s.name);
      spans.push_back(s.idle ? 1 : 0);
    }
    rows.push_back({{"label", row.label}, {"pid", row.pid}, {"gpu", row.gpu}, {"spans", std::move(spans)}});
  }
  return {{"names", timeline.names}, {"rows", std::move(rows)}, {"note", timeline.note}};
}

ordered_json data_json(const report::AnalyzeReport& report, const report::ReportViews& views) {
  ordered_json d;
  d["analyze"] = ordered_json::parse(analyze_json(report));
  d["sampling"] = {{"rate_hz", views.rate_hz},
                   {"achieved_rate_hz", views.achieved_rate_hz},
                   {"invalid_share", views.invalid_share},
                   {"thread_samples", views.thread_samples}};
  ordered_json steps = ordered_json::array();
  for (const auto& s : report.steps) {
    steps.push_back({{"mode", s.mode},
                     {"step", s.step},
                     {"pid", s.pid},
                     {"node", s.node},
                     {"start_s", static_cast<double>(s.start_us - report.job.start_us) / 1e6},
                     {"seconds", s.seconds()},
                     {"wait_s", s.wait_s ? ordered_json(*s.wait_s) : ordered_json(nullptr)},
                     {"dataloader_s", s.dataloader_s},
                     {"outlier", s.outlier}});
  }
  d["steps"] = std::move(steps);
  ordered_json flames = ordered_json::array();
  for (const auto& v : views.flames) {
    flames.push_back({{"id", v.id}, {"label", v.label}, {"samples", v.samples}, {"root", flame_json(v.root)}});
  }
  d["flames"] = std::move(flames);
  d["flames_note"] = views.flames_note;
  ordered_json system = ordered_json::array();
  for (const auto& node : views.system) {
    ordered_json series = ordered_json::array();
    for (const auto& s : node.series) {
      ordered_json values = ordered_json::array();
      for (double v : s.values) {
        if (std::isnan(v)) {
          values.push_back(nullptr);
        } else {
          values.push_back(std::round(v * 1000) / 1000);  // the page draws, it does not need more digits
        }
      }
      series.push_back({{"name", s.name}, {"unit", s.unit}, {"values", std::move(values)}});
    }
    ordered_json t = ordered_json::array();
    for (double x : node.t_s) t.push_back(std::round(x * 1000) / 1000);
    system.push_back({{"node", node.node}, {"t_s", std::move(t)}, {"series", std::move(series)}});
  }
  d["system"] = std::move(system);
  d["system_note"] = views.system_note;
  d["timeline"] = timeline_json(views.timeline);
  return d;
}

}  // namespace

std::string analyze_html(const report::AnalyzeReport& report, const report::ReportViews& views) {
  const std::string title = "sprof report: " + report.dir.string();
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>";
  append_markup_escaped(out, title);
  out += "</title>\n<style>\n";
  out += assets::uplot_css;
  out += "\n";
  out += assets::flamegraph_css;
  out += "\n";
  out += assets::page_css;
  out += "\n</style>\n";
  // The vendored libraries are minified files that hold no "</script".
  out += "<script>\n";
  out += assets::d3_js;
  out += "\n</script>\n<script>\n";
  out += assets::flamegraph_js;
  out += "\n</script>\n<script>\n";
  out += assets::uplot_js;
  out += "\n</script>\n</head>\n<body>\n<h1>";
  append_markup_escaped(out, title);
  // The verdict first, then the training loop's flame graph the page opens on, then the rest.
  out += "</h1>\n<nav><a href=\"#verdict\">Verdict</a><a href=\"#flame\">Flame graph</a><a href=\"#timeline\">Timeline</a>"
         "<a href=\"#steps\">Steps</a><a href=\"#system\">System</a><a href=\"#functions\">Functions</a>"
         "<a href=\"#phases\">Phases</a><a href=\"#rules\">Rules</a><a href=\"#gpu\">GPU</a><a href=\"#job\">Job</a></nav>\n"
         "<section id=\"verdict\"><h2>Verdict</h2></section>\n"
         "<section id=\"flame\"><h2>Flame graph</h2></section>\n"
         "<section id=\"timeline\"><h2>Timeline</h2></section>\n"
         "<section id=\"steps\"><h2>Step times</h2></section>\n"
         "<section id=\"system\"><h2>System</h2></section>\n"
         "<section id=\"functions\"><h2>Top functions</h2></section>\n"
         "<section id=\"phases\"><h2>Job phases</h2></section>\n"
         "<section id=\"rules\"><h2>Rules</h2></section>\n"
         "<section id=\"gpu\"><h2>GPU</h2></section>\n"
         "<section id=\"job\"><h2>Job</h2></section>\n"
         "<script type=\"application/json\" id=\"sprof-data\">";
  out += json_script_safe(data_json(report, views).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  out += "</script>\n<script>\n";
  out += script_safe(assets::page_js);
  out += "\n</script>\n</body>\n</html>\n";
  return out;
}

Result<WrittenPage> write_analyze_html(const query::Profile& profile, const report::AnalyzeReport& report,
                                       const std::string& path) {
  SPROF_TRY(report::ReportViews views, report::report_views(profile, report, report::ReportViewOptions{}));
  const std::string page = analyze_html(report, views);
  SPROF_TRY_STATUS(store::write_file_atomically(path, page));
  return WrittenPage{page.size(), views.flames.size()};
}

}  // namespace sprof::render
