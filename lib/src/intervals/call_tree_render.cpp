// The call tree of an interval as pyinstrument's JSONRenderer writes it (what smdebug's
// PyinstrumentAnalysis loads from python_stats.json), and as a small static HTML page (its
// python_stats.html partner, which PyinstrumentAnalysis expects next to the JSON).

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sprof/interval_stats.hpp"
#include "sprof/markup.hpp"

namespace sprof::intervals {
namespace {

using Json = nlohmann::ordered_json;

std::string short_path(const std::string& file) {
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// pyinstrument's notion: code the user wrote, not the standard library or installed packages.
bool is_application_code(const std::string& file) {
  if (file.empty() || file.front() == '<') return false;
  for (const char* library : {"/site-packages/", "/dist-packages/", "/lib/python"}) {
    if (file.find(library) != std::string::npos) return false;
  }
  return true;
}

std::string program_of(const store::ProfileSamples& profile, const ProcessInterval& interval) {
  const store::ProcessSamples& p = profile.processes.at(interval.process);
  std::string program;
  if (p.process != nullptr) {
    for (const auto& arg : p.process->cmdline) {
      if (!program.empty()) program += ' ';
      program += arg;
    }
  }
  if (program.empty() && !p.log.processes().empty()) program = p.log.processes().back().executable;
  return program;
}

Json frame_json(const store::SampleLog& log, const IntervalStats& stats, uint32_t node) {
  const CallTreeNode& n = stats.tree[node];
  const store::LogFunction& fn = log.functions()[n.function];
  Json j;
  j["function"] = fn.name;
  j["file_path_short"] = short_path(fn.file);
  j["file_path"] = fn.file;
  j["line_no"] = fn.first_line;
  j["time"] = n.time_s;
  j["is_application_code"] = is_application_code(fn.file);
  Json children = Json::array();
  for (uint32_t child : n.children) children.push_back(frame_json(log, stats, child));
  j["children"] = std::move(children);
  return j;
}

Json root_json(const store::SampleLog& log, const IntervalStats& stats) {
  const CallTreeNode& root = stats.tree.at(0);
  if (root.children.empty()) return Json(nullptr);
  if (root.children.size() == 1) return frame_json(log, stats, root.children.front());
  // Several outermost frames (threads): pyinstrument's tree has one root, so add one.
  Json j;
  j["function"] = "<all threads>";
  j["file_path_short"] = "";
  j["file_path"] = "";
  j["line_no"] = 0;
  j["time"] = root.time_s;
  j["is_application_code"] = false;
  Json children = Json::array();
  for (uint32_t child : root.children) children.push_back(frame_json(log, stats, child));
  j["children"] = std::move(children);
  return j;
}

void html_node(const store::SampleLog& log, const IntervalStats& stats, uint32_t node, double total,
               std::string& out) {
  const CallTreeNode& n = stats.tree[node];
  const store::LogFunction& fn = log.functions()[n.function];
  double share = total > 0 ? 100.0 * n.time_s / total : 0.0;
  std::string label = fmt::format("<span class=t>{:.3f}</span> <span class=p>{:.1f}%</span> {} "
                                  "<span class=f>{}:{}</span>",
                                  n.time_s, share, markup_escaped(fn.name), markup_escaped(short_path(fn.file)),
                                  fn.first_line);
  if (n.children.empty()) {
    out += "<div class=leaf>" + label + "</div>\n";
    return;
  }
  out += "<details" + std::string(share >= 5.0 ? " open" : "") + "><summary>" + label + "</summary>\n";
  for (uint32_t child : n.children) html_node(log, stats, child, total, out);
  out += "</details>\n";
}

}  // namespace

std::string render_tree_json(const store::ProfileSamples& profile, const ProcessInterval& interval,
                             const IntervalStats& stats, PythonTimer timer) {
  const store::SampleLog& log = profile.processes.at(interval.process).log;
  Json doc;
  doc["start_time"] = interval.name.start.time_us / 1e6;
  doc["duration"] = (interval.name.end.time_us - interval.name.start.time_us) / 1e6;
  doc["sample_count"] = stats.samples;
  doc["program"] = program_of(profile, interval);
  doc["cpu_time"] = stats.cpu_seconds;
  doc["root_frame"] = root_json(log, stats);
  doc["timer"] = std::string(to_string(timer));
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render_tree_html(const store::ProfileSamples& profile, const ProcessInterval& interval,
                             const IntervalStats& stats, PythonTimer timer) {
  const store::SampleLog& log = profile.processes.at(interval.process).log;
  std::string out =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + markup_escaped(interval.dir_name) +
      "</title>\n<style>body{font:13px monospace}details,div.leaf{margin-left:1.5em}"
      ".t{color:#a00}.p{color:#555}.f{color:#777}</style></head><body>\n";
  out += fmt::format("<h3>{}</h3>\n<p>node {}, pid {}: {} samples, {:.3f} s ({}), program {}</p>\n",
                     markup_escaped(interval.dir_name), markup_escaped(interval.node_id), interval.pid, stats.samples,
                     stats.seconds, to_string(timer), markup_escaped(program_of(profile, interval)));
  if (stats.tree.empty() || stats.tree[0].children.empty()) {
    out += "<p>No samples in this interval.</p>\n";
  } else {
    for (uint32_t child : stats.tree[0].children) html_node(log, stats, child, stats.tree[0].time_s, out);
  }
  out += "</body></html>\n";
  return out;
}

}  // namespace sprof::intervals
