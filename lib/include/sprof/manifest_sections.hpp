#pragma once
// The sections of sprof.json that one stage writes and another reads, as types, each written and
// read here only: what the system monitor measured (system_metrics), what each of sprof's parts
// cost (own_costs) and what the stats writer wrote (interval_stats). Readers are lenient, as
// readers of an older sprof.json must be: a field that is missing or of another type is unset.
// (The python_profiling section is the window stage's: python_profiling.hpp.)

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/profile_files.hpp"
#include "sprof/manifest.hpp"

namespace sprof::store {

// Replaces (or adds) the section `name` with JSON text; the section's text, or null.
void set_section(Manifest& manifest, std::string_view name, std::string json_text);
const std::string* find_section(const Manifest& manifest, std::string_view name);
// A section parsed, for the stages that own sections of their own (window, gpu); nullopt when
// the manifest has none or it is not a JSON object.
std::optional<nlohmann::json> section_json(const Manifest& manifest, std::string_view name);

struct SystemMetricsSection {
  static constexpr std::string_view kName = "system_metrics";
  std::string node_id;
  std::optional<int> interval_ms;
  int64_t ticks = 0;
  int64_t gpus = 0;
  std::optional<double> thread_cpu_s;  // the monitor thread's CPU time
  std::optional<double> wall_s;        // over this much wall time
  std::string error;                   // the metrics are incomplete because of this
};

// Each of sprof's parts that runs on the session thread (a record hook), by its cost name.
struct OwnCostsSection {
  static constexpr std::string_view kName = "own_costs";
  struct Part {
    std::string name;  // "markers", "stats_directories", "system_monitor", ...
    double while_sampling_cpu_s = 0;
    double after_sampling_cpu_s = 0;
    double after_sampling_wall_s = 0;
  };
  std::vector<Part> parts;  // written in hook order; read back in name order
};

struct IntervalStatsSection {
  static constexpr std::string_view kName = "interval_stats";
  std::string profiler;  // the profiler directory written: "pyinstrument"
  std::string timer;     // total_time | cpu_time | off_cpu_time
  std::string window;    // the profiling window, in words
  uint64_t intervals = 0;
  uint64_t directories = 0;
  uint64_t excluded = 0;
  uint64_t without_samples = 0;
  uint64_t without_samples_not_written = 0;
  bool finished = true;  // false: stopped early by a signal
};

void set_section(Manifest& manifest, const SystemMetricsSection& section);
void set_section(Manifest& manifest, const OwnCostsSection& section);
void set_section(Manifest& manifest, const IntervalStatsSection& section);

// nullopt when the manifest has no such section or it is not a JSON object.
std::optional<SystemMetricsSection> system_metrics_section(const Manifest& manifest);
std::optional<OwnCostsSection> own_costs_section(const Manifest& manifest);
std::optional<IntervalStatsSection> interval_stats_section(const Manifest& manifest);

// The machine each system-metrics node id stands for: smdebug's reader reads only system files
// named "<minute>.algo-<n>.json", so record names a machine's metrics algo-<n> on disk and its
// sprof.json says which host that is (system_metrics.node_id and host). From for_each_manifest;
// ids no manifest names are missing (smdebug's own profiles: there algo-<n> is the host).
std::map<std::string, std::string> system_node_hosts(const std::filesystem::path& dir, const ProfileFiles& files = local_files());
// The host `node` stands for in such a map, else the node id itself.
std::string system_node_host(const std::map<std::string, std::string>& hosts, const std::string& node);

}  // namespace sprof::store
