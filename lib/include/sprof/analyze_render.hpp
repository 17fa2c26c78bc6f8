#pragma once
// The `sprof analyze` page, rendered: as text for a terminal, or as one JSON object.

#include <cstddef>
#include <string>

#include "sprof/analyze.hpp"
#include "sprof/report_views.hpp"

namespace sprof::render {

struct TextStyle {
  bool color = false;  // ANSI colours and bold headings
  size_t width = 0;    // terminal columns to fit table lines to; 0: no limit
};

// The page: job, job phases, step times and the slowest steps, top functions, system usage,
// rule findings; a section without data says why in parentheses.
std::string analyze_text(const report::AnalyzeReport& report, const TextStyle& style);

// --format json: the report as one JSON object (stable key order); sections without data carry
// a "note".
std::string analyze_json(const report::AnalyzeReport& report);

// The HTML report: one self-contained page (its charts and flame graph libraries inlined) with
// the analyze page's sections as tables and charts, plus `views` (every step's time, the system
// metrics over time, a flame graph per view). Opens offline from disk.
std::string analyze_html(const report::AnalyzeReport& report, const report::ReportViews& views);
// The page for `report` of `profile` (its views read from it) written to `path`, replacing the
// file only once the page is whole; what it holds, for the closing line.
struct WrittenPage {
  size_t bytes = 0;
  size_t flame_graphs = 0;
};
Result<WrittenPage> write_analyze_html(const query::Profile& profile, const report::AnalyzeReport& report,
                                       const std::string& path);

}  // namespace sprof::render
