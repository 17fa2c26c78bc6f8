#include "sprof/manifest_sections.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace sprof::store {

using nlohmann::json;
using nlohmann::ordered_json;

void set_section(Manifest& manifest, std::string_view name, std::string json_text) {
  auto& extra = manifest.extra;
  extra.erase(std::remove_if(extra.begin(), extra.end(), [&](const auto& e) { return e.first == name; }),
              extra.end());
  extra.emplace_back(std::string(name), std::move(json_text));
}

const std::string* find_section(const Manifest& manifest, std::string_view name) {
  for (const auto& [key, text] : manifest.extra) {
    if (key == name) return &text;
  }
  return nullptr;
}

std::optional<json> section_json(const Manifest& manifest, std::string_view name) {
  const std::string* text = find_section(manifest, name);
  if (text == nullptr) return std::nullopt;
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

namespace {

std::optional<double> number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

template <typename T>
void get_integer(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_number_integer()) out = it->get<T>();
}

void get_string(const json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_string()) out = it->get<std::string>();
}

}  // namespace

void set_section(Manifest& manifest, const SystemMetricsSection& s) {
  ordered_json j = {{"node_id", s.node_id}};
  if (s.interval_ms) j["interval_ms"] = *s.interval_ms;
  j["ticks"] = s.ticks;
  j["gpus"] = s.gpus;
  if (s.thread_cpu_s) j["thread_cpu_s"] = *s.thread_cpu_s;
  if (s.wall_s) j["wall_s"] = *s.wall_s;
  if (!s.error.empty()) j["error"] = s.error;
  set_section(manifest, SystemMetricsSection::kName, j.dump());
}

void set_section(Manifest& manifest, const OwnCostsSection& s) {
  ordered_json parts = ordered_json::object();
  for (const auto& p : s.parts) {
    parts[p.name] = {{"while_sampling_cpu_s", p.while_sampling_cpu_s},
                     {"after_sampling_cpu_s", p.after_sampling_cpu_s},
                     {"after_sampling_wall_s", p.after_sampling_wall_s}};
  }
  set_section(manifest, OwnCostsSection::kName, parts.dump());
}

void set_section(Manifest& manifest, const IntervalStatsSection& s) {
  ordered_json j;
  j["profiler"] = s.profiler;
  j["timer"] = s.timer;
  j["window"] = s.window;
  j["intervals"] = s.intervals;
  j["directories"] = s.directories;
  j["excluded"] = s.excluded;
  j["without_samples"] = s.without_samples;
  j["without_samples_not_written"] = s.without_samples_not_written;
  j["finished"] = s.finished;
  set_section(manifest, IntervalStatsSection::kName, j.dump());
}

std::optional<SystemMetricsSection> system_metrics_section(const Manifest& manifest) {
  auto j = section_json(manifest, SystemMetricsSection::kName);
  if (!j) return std::nullopt;
  SystemMetricsSection s;
  get_string(*j, "node_id", s.node_id);
  if (auto it = j->find("interval_ms"); it != j->end() && it->is_number_integer()) s.interval_ms = it->get<int>();
  get_integer(*j, "ticks", s.ticks);
  get_integer(*j, "gpus", s.gpus);
  s.thread_cpu_s = number(*j, "thread_cpu_s");
  s.wall_s = number(*j, "wall_s");
  get_string(*j, "error", s.error);
  return s;
}

std::optional<OwnCostsSection> own_costs_section(const Manifest& manifest) {
  auto j = section_json(manifest, OwnCostsSection::kName);
  if (!j) return std::nullopt;
  OwnCostsSection s;
  for (const auto& [name, part] : j->items()) {
    if (!part.is_object()) continue;
    s.parts.push_back({name, number(part, "while_sampling_cpu_s").value_or(0),
                       number(part, "after_sampling_cpu_s").value_or(0),
                       number(part, "after_sampling_wall_s").value_or(0)});
  }
  return s;
}

std::optional<IntervalStatsSection> interval_stats_section(const Manifest& manifest) {
  auto j = section_json(manifest, IntervalStatsSection::kName);
  if (!j) return std::nullopt;
  IntervalStatsSection s;
  get_string(*j, "profiler", s.profiler);
  get_string(*j, "timer", s.timer);
  get_string(*j, "window", s.window);
  get_integer(*j, "intervals", s.intervals);
  get_integer(*j, "directories", s.directories);
  get_integer(*j, "excluded", s.excluded);
  get_integer(*j, "without_samples", s.without_samples);
  get_integer(*j, "without_samples_not_written", s.without_samples_not_written);
  if (auto it = j->find("finished"); it != j->end() && it->is_boolean()) s.finished = it->get<bool>();
  return s;
}

std::map<std::string, std::string> system_node_hosts(const std::filesystem::path& dir, const ProfileFiles& files) {
  std::map<std::string, std::string> hosts;
  for_each_manifest(dir, [&](const Manifest& manifest) {
    auto section = system_metrics_section(manifest);
    if (section && !section->node_id.empty() && !manifest.host.empty()) hosts[section->node_id] = manifest.host;
  }, files);
  return hosts;
}

std::string system_node_host(const std::map<std::string, std::string>& hosts, const std::string& node) {
  auto it = hosts.find(node);
  return it != hosts.end() ? it->second : node;
}

}  // namespace sprof::store
