#include "sprof/manifest.hpp"
#include "sprof/profile_files.hpp"

#include "sprof/file_bytes.hpp"
#include "common/json_text.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace sprof::store {

using nlohmann::ordered_json;

namespace {

ordered_json clock_point(const Manifest& m, int64_t monotonic_ns) {
  ordered_json j;
  j["monotonic_ns"] = monotonic_ns;
  j["epoch_us"] = monotonic_ns == 0 ? 0 : m.to_epoch_us(monotonic_ns);
  return j;
}

// A key of the wrong type is an error that names the key (the caller adds the file).
struct WrongType : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class T>
void get_if(const ordered_json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann converts a float to an integer with a plain cast: undefined behaviour out of range.
    bool fits = false;
    if (it->is_number_unsigned()) {
      fits = it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    } else if (it->is_number_integer()) {
      int64_t v = it->get<int64_t>();
      fits = v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
             (v < 0 || static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max()));
    }
    if (!it->is_number()) throw WrongType(fmt::format("\"{}\" has the wrong type ({})", key, it->type_name()));
    if (!fits) throw WrongType(fmt::format("\"{}\" is not an integer in range ({})", key, it->dump().substr(0, 40)));
    out = it->is_number_unsigned() ? static_cast<T>(it->get<uint64_t>()) : static_cast<T>(it->get<int64_t>());
    return;
  }
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw WrongType(fmt::format("\"{}\" has the wrong type ({})", key, it->type_name()));
  }
}

}  // namespace

std::vector<std::string> Manifest::node_ids() const {
  std::vector<std::string> ids;
  for (const auto& p : processes) {
    if (!p.sample_log.empty()) ids.push_back(p.node_id);
  }
  return ids;
}

Status write_manifest(const std::filesystem::path& dir, const Manifest& m) {
  ordered_json j;
  j["schema_version"] = m.schema_version;
  j["sprof_version"] = m.sprof_version;
  j["state"] = m.state;
  j["mode"] = m.mode;
  j["command"] = m.command;
  j["target_pid"] = m.target_pid;
  j["host"] = m.host;
  j["node_ids"] = m.node_ids();
  j["clock"] = {{"monotonic_ns", m.clock_monotonic_ns}, {"realtime_ns", m.clock_realtime_ns}};
  j["start"] = clock_point(m, m.start_ns);
  j["end"] = clock_point(m, m.end_ns);
  j["duration_s"] = m.end_ns > m.start_ns ? double(m.end_ns - m.start_ns) / 1e9 : 0.0;
  j["sampling"] = {{"rate_hz", m.rate_hz},
                   {"mode", m.blocking ? "blocking" : "nonblocking"},
                   {"subprocesses", m.subprocesses},
                   {"jitter", m.jitter}};
  std::set<std::string> versions;
  ordered_json processes = ordered_json::array();
  for (const auto& p : m.processes) {
    ordered_json jp;
    jp["pid"] = p.pid;
    jp["ppid"] = p.ppid;
    jp["node_id"] = p.node_id;
    jp["python_version"] = p.python_version;
    jp["executable"] = p.executable;
    jp["cmdline"] = p.cmdline;
    if (!p.rank.empty()) jp["rank"] = p.rank;
    if (!p.local_rank.empty()) jp["local_rank"] = p.local_rank;
    if (!p.world_size.empty()) jp["world_size"] = p.world_size;
    if (!p.group_rank.empty()) jp["group_rank"] = p.group_rank;
    jp["sample_log"] = p.sample_log;
    jp["attach_ns"] = p.attach_ns;
    jp["detach_ns"] = p.detach_ns;
    jp["samples"] = p.samples;
    jp["invalid"] = p.invalid;
    jp["threads"] = p.threads;
    if (!p.error.empty()) jp["error"] = p.error;
    processes.push_back(std::move(jp));
    if (!p.python_version.empty()) versions.insert(p.python_version);
  }
  j["python_versions"] = versions;
  j["processes"] = std::move(processes);
  const SamplingHealth& h = m.health;
  j["health"] = {{"ticks", h.ticks},
                 {"thread_samples", h.thread_samples},
                 {"invalid", h.invalid},
                 {"invalid_share", h.invalid_share()},
                 {"late_ticks", h.late_ticks},
                 {"max_lag_ms", h.max_lag_ms},
                 {"behind_warnings", h.behind_warnings},
                 {"achieved_rate_hz", h.achieved_rate_hz},
                 {"mean_tick_us", h.mean_tick_us},
                 {"max_tick_ms", h.max_tick_ms},
                 {"remote_reads_per_tick", h.remote_reads_per_tick},
                 {"regions_per_tick", h.regions_per_tick},
                 {"bytes_per_tick", h.bytes_per_tick},
                 {"proc_reads_per_tick", h.proc_reads_per_tick},
                 {"sampler_cpu_s", h.sampler_cpu_s},
                 {"process_cpu_s", h.process_cpu_s}};
  j["exit"] = {{"status", m.exit_status ? ordered_json(*m.exit_status) : ordered_json()},
               {"signal", m.exit_signal ? ordered_json(*m.exit_signal) : ordered_json()}};
  if (m.running_at_end) j["exit"]["running"] = *m.running_at_end;
  j["errors"] = m.errors;
  for (const auto& [key, text] : m.extra) {
    auto value = ordered_json::parse(text, nullptr, false);
    if (value.is_discarded()) {
      return make_error(ErrorKind::runtime, "manifest section {} is not valid JSON", key);
    }
    j[key] = std::move(value);
  }

  // Whole or not at all: a failed write (a full disk) leaves the previous sprof.json and no
  // temporary file behind.
  return write_file_atomically(dir / kManifestFileName, j.dump(2) + "\n");
}

Result<Manifest> read_manifest(const std::filesystem::path& dir, const ProfileFiles& files) {
  auto path = dir / kManifestFileName;
  SPROF_TRY(std::string text, read_all(files, path));
  return parse_manifest(text, path);
}

Result<Manifest> parse_manifest(std::string_view text, const std::filesystem::path& path) {
  if (!json_depth_within(text)) {
    return make_error(ErrorKind::bad_input, "{} is nested deeper than {} levels", path.string(), kMaxJsonDepth);
  }
  auto j = ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(ErrorKind::bad_input, "{} is not valid JSON", path.string());
  Manifest m;
  try {
    get_if(j, "schema_version", m.schema_version);
    if (m.schema_version > kManifestSchemaVersion) {
      return make_error(ErrorKind::unsupported, "{}: manifest schema version {} is newer than this sprof reads ({})",
                        path.string(), m.schema_version, kManifestSchemaVersion);
    }
    get_if(j, "sprof_version", m.sprof_version);
    get_if(j, "state", m.state);
    get_if(j, "mode", m.mode);
    get_if(j, "command", m.command);
    get_if(j, "target_pid", m.target_pid);
    get_if(j, "host", m.host);
    if (auto c = j.find("clock"); c != j.end()) {
      get_if(*c, "monotonic_ns", m.clock_monotonic_ns);
      get_if(*c, "realtime_ns", m.clock_realtime_ns);
    }
    if (auto s = j.find("start"); s != j.end()) get_if(*s, "monotonic_ns", m.start_ns);
    if (auto e = j.find("end"); e != j.end()) get_if(*e, "monotonic_ns", m.end_ns);
    if (auto s = j.find("sampling"); s != j.end()) {
      get_if(*s, "rate_hz", m.rate_hz);
      std::string mode;
      get_if(*s, "mode", mode);
      m.blocking = mode == "blocking";
      get_if(*s, "subprocesses", m.subprocesses);
      get_if(*s, "jitter", m.jitter);
    }
    if (auto ps = j.find("processes"); ps != j.end() && ps->is_array()) {
      for (const auto& jp : *ps) {
        ManifestProcess p;
        get_if(jp, "pid", p.pid);
        get_if(jp, "ppid", p.ppid);
        get_if(jp, "node_id", p.node_id);
        get_if(jp, "python_version", p.python_version);
        get_if(jp, "executable", p.executable);
        get_if(jp, "cmdline", p.cmdline);
        get_if(jp, "rank", p.rank);
        get_if(jp, "local_rank", p.local_rank);
        get_if(jp, "world_size", p.world_size);
        get_if(jp, "group_rank", p.group_rank);
        get_if(jp, "sample_log", p.sample_log);
        get_if(jp, "attach_ns", p.attach_ns);
        get_if(jp, "detach_ns", p.detach_ns);
        get_if(jp, "samples", p.samples);
        get_if(jp, "invalid", p.invalid);
        get_if(jp, "threads", p.threads);
        get_if(jp, "error", p.error);
        m.processes.push_back(std::move(p));
      }
    }
    if (auto h = j.find("health"); h != j.end()) {
      get_if(*h, "ticks", m.health.ticks);
      get_if(*h, "thread_samples", m.health.thread_samples);
      get_if(*h, "invalid", m.health.invalid);
      get_if(*h, "late_ticks", m.health.late_ticks);
      get_if(*h, "max_lag_ms", m.health.max_lag_ms);
      get_if(*h, "behind_warnings", m.health.behind_warnings);
      get_if(*h, "achieved_rate_hz", m.health.achieved_rate_hz);
      get_if(*h, "mean_tick_us", m.health.mean_tick_us);
      get_if(*h, "max_tick_ms", m.health.max_tick_ms);
      get_if(*h, "remote_reads_per_tick", m.health.remote_reads_per_tick);
      get_if(*h, "regions_per_tick", m.health.regions_per_tick);
      get_if(*h, "bytes_per_tick", m.health.bytes_per_tick);
      get_if(*h, "proc_reads_per_tick", m.health.proc_reads_per_tick);
      get_if(*h, "sampler_cpu_s", m.health.sampler_cpu_s);
      get_if(*h, "process_cpu_s", m.health.process_cpu_s);
    }
    if (auto e = j.find("exit"); e != j.end()) {
      int value = 0;
      if (auto s = e->find("status"); s != e->end() && s->is_number_integer()) {
        get_if(*e, "status", value);
        m.exit_status = value;
      }
      if (auto s = e->find("signal"); s != e->end() && s->is_number_integer()) {
        get_if(*e, "signal", value);
        m.exit_signal = value;
      }
      if (auto r = e->find("running"); r != e->end() && r->is_boolean()) m.running_at_end = r->get<bool>();
    }
    get_if(j, "errors", m.errors);
    static const std::set<std::string> known = {
        "schema_version", "sprof_version", "state", "mode", "command", "target_pid", "host", "node_ids",
        "clock", "start", "end", "duration_s", "sampling", "python_versions", "processes", "health", "exit", "errors"};
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (known.count(it.key()) == 0) m.extra.emplace_back(it.key(), it.value().dump());
    }
    // Times are added and subtracted (to_epoch_us, durations): keep them where that cannot overflow.
    constexpr int64_t kMaxTimeNs = int64_t{1} << 62;
    auto time_ok = [&](int64_t value, const std::string& key) {
      if (value < 0 || value >= kMaxTimeNs) throw WrongType(fmt::format("\"{}\" is out of range ({})", key, value));
    };
    time_ok(m.clock_monotonic_ns, "clock.monotonic_ns");
    time_ok(m.clock_realtime_ns, "clock.realtime_ns");
    time_ok(m.start_ns, "start.monotonic_ns");
    time_ok(m.end_ns, "end.monotonic_ns");
    for (size_t i = 0; i < m.processes.size(); ++i) {
      time_ok(m.processes[i].attach_ns, fmt::format("processes[{}].attach_ns", i));
      time_ok(m.processes[i].detach_ns, fmt::format("processes[{}].detach_ns", i));
    }
  } catch (const WrongType& e) {
    return make_error(ErrorKind::bad_input, "{}: {}", path.string(), e.what());
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorKind::bad_input, "{}: unexpected value in the manifest: {}", path.string(), e.what());
  }
  return m;
}

namespace {

void visit_manifest(const std::filesystem::path& dir, const std::function<void(const Manifest&)>& fn,
                    const ProfileFiles& files) {
  auto manifest = read_manifest(dir, files);
  if (manifest.ok()) fn(*manifest);
}

}  // namespace

void for_each_manifest(const std::filesystem::path& dir, const std::function<void(const Manifest&)>& fn,
                       const ProfileFiles& files) {
  if (files.kind(dir / kManifestFileName) == FileKind::file) visit_manifest(dir, fn, files);
  std::filesystem::path nodes = dir / "nodes";
  if (files.kind(nodes) == FileKind::directory) {
    auto entries = files.list(nodes);
    if (entries.ok()) {
      for (const auto& e : *entries) {
        if (e.kind == FileKind::directory) visit_manifest(e.path, fn, files);
      }
    }
  }
}

std::map<std::string, std::string> process_ranks(const std::filesystem::path& dir, const ProfileFiles& files) {
  std::map<std::string, std::string> ranks;
  for_each_manifest(dir, [&](const Manifest& manifest) {
    for (const auto& p : manifest.processes) {
      if (!p.rank.empty()) ranks[p.node_id] = p.rank;
    }
  }, files);
  return ranks;
}

}  // namespace sprof::store
