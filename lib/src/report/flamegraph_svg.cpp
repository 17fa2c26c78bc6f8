// An interactive flame graph as one SVG file, as flamegraph.pl draws it (root at the bottom,
// frames as wide as their share of the samples, warm colours by function name) with its
// behaviour written here: hover titles, click to zoom, Ctrl-F or the Search button to highlight
// a regular expression (the matched share is shown), Reset zoom. Opens in any browser, offline.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "sprof/markup.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::report {

namespace {

struct Node {
  std::string name;
  uint64_t samples = 0;
  std::map<std::string, std::unique_ptr<Node>> children;  // by name: the graph is sorted by name, as flamegraph.pl's
};

// At most `bytes` bytes of `text`, not cutting a UTF-8 sequence.
std::string_view utf8_prefix(std::string_view text, size_t bytes) {
  if (bytes >= text.size()) return text;
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xc0) == 0x80) --bytes;
  return text.substr(0, bytes);
}

// flamegraph.pl's "hot" palette, from a hash of the function's name (not random: the same
// function has the same colour in every graph).
std::string colour(std::string_view name) {
  // FNV-1a over the name up to its " (file:line)" part.
  std::string_view fn = name.substr(0, name.find(" ("));
  uint64_t h = 1469598103934665603ull;
  for (char c : fn) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  const double v1 = static_cast<double>(h & 0xffff) / 65535.0;
  const double v2 = static_cast<double>((h >> 16) & 0xffff) / 65535.0;
  const double v3 = static_cast<double>((h >> 32) & 0xffff) / 65535.0;
  const int r = 205 + static_cast<int>(50 * v3);
  const int g = static_cast<int>(230 * v1);
  const int b = static_cast<int>(55 * v2);
  return fmt::format("rgb({},{},{})", r, g, b);
}

struct Layout {
  double width_px = 1200;
  double pad = 10;
  double frame_px = 16;
  double top_px = 50;  // title, buttons, details line
  double min_px = 0.1;
  size_t depth = 0;
  uint64_t total = 0;
};

size_t depth_of(const Node& n) {
  size_t d = 0;
  for (const auto& [name, child] : n.children) d = std::max(d, depth_of(*child));
  return d + 1;
}

// One <g> per frame; data-x/data-w are in samples (the script zooms with them), data-d the depth.
void emit(const Node& n, uint64_t x, size_t depth, const Layout& l, std::string& out, uint64_t& drawn) {
  const double scale = (l.width_px - 2 * l.pad) / static_cast<double>(l.total);
  const double w_px = static_cast<double>(n.samples) * scale;
  if (w_px < l.min_px) return;
  ++drawn;
  const double x_px = l.pad + static_cast<double>(x) * scale;
  const double y_px = l.top_px + static_cast<double>(l.depth - 1 - depth) * l.frame_px;
  const double pct = 100.0 * static_cast<double>(n.samples) / static_cast<double>(l.total);
  out += fmt::format("<g class=\"f\" data-x=\"{}\" data-w=\"{}\" data-d=\"{}\"><title>", x, n.samples, depth);
  append_markup_escaped(out, n.name);
  out += fmt::format(" ({} samples, {:.2f}%)</title><rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" "
                     "fill=\"{}\" rx=\"2\" ry=\"2\"/><text x=\"{:.2f}\" y=\"{:.1f}\">",
                     n.samples, pct, x_px, y_px, w_px, l.frame_px - 1, colour(n.name), x_px + 3,
                     y_px + l.frame_px - 4.5);
  // The label as the script fits it (about 7 px a character), so that viewers without scripts
  // show names too.
  const long chars = static_cast<long>(std::floor((w_px - 6) / 7));
  if (chars >= 3) {
    if (n.name.size() <= static_cast<size_t>(chars)) {
      append_markup_escaped(out, n.name);
    } else {
      append_markup_escaped(out, utf8_prefix(n.name, static_cast<size_t>(chars - 2)));
      out += "..";
    }
  }
  out += "</text></g>\n";
  uint64_t child_x = x;
  for (const auto& [name, child] : n.children) {
    emit(*child, child_x, depth + 1, l, out, drawn);
    child_x += child->samples;
  }
}

// The script: text fitting, zoom, search, reset. Frames carry their names in <title>.
constexpr std::string_view kScript = R"JS(
"use strict";
var svg = document.documentElement, frames = [], zoomed = null, searching = null;
var W = +svg.getAttribute("data-width"), PAD = +svg.getAttribute("data-pad"), TOTAL = +svg.getAttribute("data-total");
var details = document.getElementById("details"), matched = document.getElementById("matched");
function name_of(g) { var t = g.querySelector("title").textContent; return t.substring(0, t.lastIndexOf(" (")); }
function fit(g) {
  var r = g.querySelector("rect"), t = g.querySelector("text"), w = +r.getAttribute("width");
  var name = name_of(g), chars = Math.floor((w - 6) / 7);
  t.setAttribute("x", +r.getAttribute("x") + 3);
  t.textContent = chars < 3 ? "" : (name.length <= chars ? name : name.substring(0, chars - 2) + "..");
}
function place(g, x0, w0) {
  var x = +g.getAttribute("data-x"), w = +g.getAttribute("data-w"), s = (W - 2 * PAD) / w0;
  var r = g.querySelector("rect");
  var left = Math.max(x, x0), right = Math.min(x + w, x0 + w0);
  if (right <= left) { g.style.display = "none"; return; }
  g.style.display = "";
  r.setAttribute("x", PAD + (left - x0) * s);
  r.setAttribute("width", Math.max(0, (right - left) * s));
  fit(g);
}
function zoom(g) {
  var x0 = +g.getAttribute("data-x"), w0 = +g.getAttribute("data-w"), d0 = +g.getAttribute("data-d");
  zoomed = g;
  frames.forEach(function (f) {
    var d = +f.getAttribute("data-d"), x = +f.getAttribute("data-x"), w = +f.getAttribute("data-w");
    // Below the clicked frame: its ancestors (they contain it), drawn full width and faded.
    if (d < d0) {
      if (x <= x0 && x + w >= x0 + w0) { place(f, x0, w0); f.classList.add("parent"); } else { f.style.display = "none"; }
    } else {
      f.classList.remove("parent");
      place(f, x0, w0);
    }
  });
  document.getElementById("unzoom").classList.remove("hide");
}
function unzoom() {
  zoomed = null;
  frames.forEach(function (f) { f.classList.remove("parent"); place(f, 0, TOTAL); });
  document.getElementById("unzoom").classList.add("hide");
}
function search(re) {
  var hit = 0, spans = [];
  frames.forEach(function (f) {
    var r = f.querySelector("rect");
    if (!r.hasAttribute("data-fill")) r.setAttribute("data-fill", r.getAttribute("fill"));
    if (re && re.test(name_of(f))) {
      r.setAttribute("fill", "rgb(230,0,230)");
      f.classList.add("match");
      spans.push([+f.getAttribute("data-x"), +f.getAttribute("data-w")]);
    } else {
      r.setAttribute("fill", r.getAttribute("data-fill"));
      f.classList.remove("match");
    }
  });
  // Share of the samples under any match: nested matches count once.
  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
  var end = -1;
  spans.forEach(function (s) {
    if (s[0] >= end) { hit += s[1]; end = s[0] + s[1]; }
    else if (s[0] + s[1] > end) { hit += s[0] + s[1] - end; end = s[0] + s[1]; }
  });
  searching = re;
  matched.textContent = re ? "Matched: " + (100 * hit / TOTAL).toFixed(1) + "%" : "";
  document.getElementById("search").textContent = re ? "Reset search" : "Search";
  return hit;
}
function ask() {
  if (searching) { search(null); return; }
  var term = window.prompt("Search for (regular expression):", "");
  if (term) { try { search(new RegExp(term)); } catch (e) { matched.textContent = "Bad expression: " + e.message; } }
}
window.addEventListener("load", function () {
  frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
  frames.forEach(function (f) {
    fit(f);
    f.addEventListener("click", function () { zoom(f); });
    f.addEventListener("mouseover", function () { details.textContent = f.querySelector("title").textContent; });
    f.addEventListener("mouseout", function () { details.textContent = " "; });
  });
  document.getElementById("unzoom").addEventListener("click", unzoom);
  document.getElementById("search").addEventListener("click", ask);
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); ask(); }
    if (e.key === "Escape") { if (searching) search(null); else if (zoomed) unzoom(); }
  });
});
// For tests and other pages: the same actions, by name.
window.flamegraph = { zoom: zoom, unzoom: unzoom, search: function (s) { return search(s ? new RegExp(s) : null); },
                      frames: function () { return frames.filter(function (f) { return f.style.display !== "none"; }).length; } };
)JS";

}  // namespace

uint64_t write_flamegraph_svg(const store::ProfileSamples& profile, const SampleFilter& filter,
                              const FlamegraphOptions& options, std::string& out) {
  Node root;
  root.name = "all";
  const std::vector<FoldedStack> stacks = fold_stacks(profile, filter);
  for (const FoldedStack& s : stacks) {
    root.samples += s.count;
    Node* n = &root;
    for (const std::string& frame : fold_import_machinery(s.frames)) {
      auto& child = n->children[frame];
      if (!child) {
        child = std::make_unique<Node>();
        child->name = frame;
      }
      child->samples += s.count;
      n = child.get();
    }
  }
  Layout l;
  l.width_px = options.width_px;
  l.total = std::max<uint64_t>(root.samples, 1);
  l.depth = depth_of(root);
  const double height = l.top_px + static_cast<double>(l.depth) * l.frame_px + 2 * l.pad;

  out += "<?xml version=\"1.0\" standalone=\"no\"?>\n";
  out += fmt::format(
      "<svg version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "xmlns=\"http://www.w3.org/2000/svg\" data-width=\"{0:.0f}\" data-pad=\"{2:.0f}\" data-total=\"{3}\">\n",
      l.width_px, height, l.pad, l.total);
  out += "<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
         "g.f text{pointer-events:none}g.f:hover rect{stroke:#000;stroke-width:0.5;cursor:pointer}"
         "g.parent{opacity:0.5}.hide{display:none}.button{cursor:pointer;fill:#333;text-decoration:underline}"
         "#title{font-size:17px;text-anchor:middle}</style>\n";
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#f8f8f8\"/>\n", l.width_px, height);
  out += fmt::format("<text id=\"title\" x=\"{:.0f}\" y=\"24\">", l.width_px / 2);
  append_markup_escaped(out, options.title);
  out += "</text>\n";
  out += fmt::format("<text id=\"unzoom\" class=\"button hide\" x=\"{:.0f}\" y=\"24\">Reset zoom</text>\n", l.pad);
  out += fmt::format("<text id=\"search\" class=\"button\" x=\"{:.0f}\" y=\"24\" text-anchor=\"end\">Search</text>\n",
                     l.width_px - l.pad);
  out += fmt::format("<text id=\"matched\" x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\"></text>\n", l.width_px - l.pad,
                     height - 4);
  out += fmt::format("<text id=\"details\" x=\"{:.0f}\" y=\"{:.0f}\"> </text>\n", l.pad, height - 4);
  uint64_t drawn = 0;
  if (root.samples > 0) emit(root, 0, 0, l, out, drawn);
  out += "<script><![CDATA[";
  out += kScript;
  out += "]]></script>\n</svg>\n";
  return root.samples;
}

}  // namespace sprof::report
