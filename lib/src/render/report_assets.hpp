#pragma once
// The HTML report's viewers (d3, d3-flame-graph, uPlot, vendored under third_party/) and its own
// script and style, inlined into report_assets.cpp when the build is configured
// (lib/CMakeLists.txt).

#include <string_view>

namespace sprof::render::assets {

extern const std::string_view d3_js;
extern const std::string_view flamegraph_js;
extern const std::string_view flamegraph_css;
extern const std::string_view uplot_js;
extern const std::string_view uplot_css;
extern const std::string_view page_js;   // lib/src/render/report_page.js
extern const std::string_view page_css;  // lib/src/render/report_page.css
extern const std::string_view diff_page_js;  // lib/src/render/diff_page.js: sprof diff -o's page

}  // namespace sprof::render::assets
