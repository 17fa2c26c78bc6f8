// The layout of sprof.dumps() (lib/src/bootstrap/python/sprof/_stats.py): keep both in step.

#include "sprof/marker_stats_render.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sprof::render {

std::string marker_stats_table(const report::MarkerStats& stats) {
  std::string out = "Profile Statistics:\n\tNote the difference in units for different entries.\n";
  auto line6 = [&out](std::string_view a, std::string_view b, std::string_view c, std::string_view d, std::string_view e,
                      std::string_view f) { fmt::format_to(std::back_inserter(out), "{:<40} {:>12} {:>16} {:>16} {:>16} {:>16}\n", a, b, c, d, e, f); };
  auto num = [](double v) { return fmt::format("{:.4f}", v); };
  auto durations = [&](const char* title, const std::vector<report::MarkerStatRow>& rows) {
    out += title;
    out += "\n=================\n";
    line6("Name", "Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)");
    line6("----", "-----------", "---------", "-------------", "-------------", "-------------");
    for (const auto& r : rows) line6(r.name, std::to_string(r.count), num(r.total), num(r.min), num(r.max), num(r.avg));
  };
  durations("Steps", stats.steps);
  // MXNet's Task, Frame and Event: only when the program used them.
  for (auto [title, rows] : {std::pair{"Tasks", &stats.tasks}, {"Frames", &stats.frames}, {"Events", &stats.events}}) {
    if (rows->empty()) continue;
    out += "\n";
    durations(title, *rows);
  }
  out += "\nMarkers\n=================\n";
  fmt::format_to(std::back_inserter(out), "{:<40} {:>12}\n{:<40} {:>12}\n", "Name", "Total Count", "----", "-----------");
  for (const auto& r : stats.markers) fmt::format_to(std::back_inserter(out), "{:<40} {:>12}\n", r.name, r.count);
  out += "\nCounters\n=================\n";
  line6("Name", "Total Count", "Min Value", "Max Value", "Avg Value", "Last Value");
  line6("----", "-----------", "---------", "---------", "---------", "----------");
  for (const auto& r : stats.counters) line6(r.name, std::to_string(r.count), num(r.min), num(r.max), num(r.avg), num(r.last));
  return out;
}

std::string marker_stats_json(const report::MarkerStats& stats) {
  nlohmann::ordered_json doc;
  doc["Steps"] = nlohmann::ordered_json::object();
  for (const auto& r : stats.steps) {
    doc["Steps"][r.name] = {{"Total Count", r.count}, {"Total Time (ms)", r.total}, {"Min Time (ms)", r.min},
                            {"Max Time (ms)", r.max}, {"Avg Time (ms)", r.avg}};
  }
  auto durations = [&doc](const char* key, const std::vector<report::MarkerStatRow>& rows) {
    if (rows.empty()) return;
    doc[key] = nlohmann::ordered_json::object();
    for (const auto& r : rows) {
      doc[key][r.name] = {{"Total Count", r.count}, {"Total Time (ms)", r.total}, {"Min Time (ms)", r.min},
                          {"Max Time (ms)", r.max}, {"Avg Time (ms)", r.avg}};
    }
  };
  durations("Tasks", stats.tasks);
  durations("Frames", stats.frames);
  durations("Events", stats.events);
  doc["Markers"] = nlohmann::ordered_json::object();
  for (const auto& r : stats.markers) doc["Markers"][r.name] = {{"Total Count", r.count}};
  doc["Counters"] = nlohmann::ordered_json::object();
  for (const auto& r : stats.counters) {
    doc["Counters"][r.name] = {{"Total Count", r.count}, {"Min Value", r.min}, {"Max Value", r.max},
                               {"Avg Value", r.avg}, {"Last Value", r.last}};
  }
  doc["Unit"] = {{"Steps", "ms"}};
  for (const char* key : {"Tasks", "Frames", "Events"}) {
    if (doc.contains(key)) doc["Unit"][key] = "ms";
  }
  return doc.dump(2) + "\n";
}

std::string markers_text(const std::vector<report::MarkerStats>& processes, bool single) {
  std::string out;
  for (size_t i = 0; i < processes.size(); ++i) {
    if (!single) fmt::format_to(std::back_inserter(out), "{}Process {}\n", i > 0 ? "\n" : "", processes[i].pid);
    out += marker_stats_table(processes[i]);
  }
  return out;
}

std::string markers_json(const std::vector<report::MarkerStats>& processes, bool single) {
  if (single) return marker_stats_json(processes.front());
  std::string out = "{\n";
  for (size_t i = 0; i < processes.size(); ++i) {
    std::string doc = marker_stats_json(processes[i]);
    doc.pop_back();  // its newline: the object goes on inside the outer one
    fmt::format_to(std::back_inserter(out), "\"{}\": {}{}\n", processes[i].pid, doc, i + 1 < processes.size() ? "," : "");
  }
  return out + "}\n";
}

}  // namespace sprof::render
