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
  out += "Steps\n=================\n";
  line6("Name", "Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)");
  line6("----", "-----------", "---------", "-------------", "-------------", "-------------");
  for (const auto& r : stats.steps) line6(r.name, std::to_string(r.count), num(r.total), num(r.min), num(r.max), num(r.avg));
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
  doc["Markers"] = nlohmann::ordered_json::object();
  for (const auto& r : stats.markers) doc["Markers"][r.name] = {{"Total Count", r.count}};
  doc["Counters"] = nlohmann::ordered_json::object();
  for (const auto& r : stats.counters) {
    doc["Counters"][r.name] = {{"Total Count", r.count}, {"Min Value", r.min}, {"Max Value", r.max},
                               {"Avg Value", r.avg}, {"Last Value", r.last}};
  }
  doc["Unit"] = {{"Steps", "ms"}};
  return doc.dump(2) + "\n";
}

}  // namespace sprof::render
