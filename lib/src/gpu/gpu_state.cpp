// The injection's per-process files and the manifest's "gpu" section.

#include <algorithm>
#include <system_error>

#include <nlohmann/json.hpp>

#include "sprof/gpu.hpp"
#include "sprof/manifest_sections.hpp"
#include "sprof/profile_files.hpp"

namespace sprof::gpu {
namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

void get_string(const json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_string()) out = it->get<std::string>();
}

GpuProcessState state_from(const json& j) {
  GpuProcessState s;
  if (auto it = j.find("pid"); it != j.end() && it->is_number_integer()) s.pid = it->get<int32_t>();
  get_string(j, "state", s.state);
  get_string(j, "detail", s.detail);
  get_string(j, "cupti", s.cupti);
  get_string(j, "cupti_source", s.cupti_source);
  if (auto it = j.find("cupti_version"); it != j.end() && it->is_number_unsigned()) s.cupti_version = it->get<uint32_t>();
  auto count = [&](const char* key) -> std::optional<int64_t> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  auto records = count("records"), chunks = count("chunks"), dropped = count("dropped"), untimed = count("untimed");
  if (records && chunks && dropped && untimed) s.counts = GpuProcessState::Counts{*records, *chunks, *dropped, *untimed};
  return s;
}

ordered_json state_json(const GpuProcessState& s) {
  ordered_json j{{"pid", s.pid},     {"state", s.state},   {"detail", s.detail},
                 {"cupti", s.cupti}, {"cupti_source", s.cupti_source}, {"cupti_version", s.cupti_version}};
  if (s.counts) {
    j["records"] = s.counts->records;
    j["chunks"] = s.counts->chunks;
    j["dropped"] = s.counts->dropped;
    j["untimed"] = s.counts->untimed;
  }
  return j;
}

}  // namespace

Result<GpuProcessState> parse_gpu_state(std::string_view text, const std::string& source) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(ErrorKind::bad_input, "{}: not a JSON object", source);
  GpuProcessState s = state_from(j);
  if (s.pid <= 0 || s.state.empty()) return make_error(ErrorKind::bad_input, "{}: no pid or no state", source);
  return s;
}

std::vector<GpuProcessState> read_gpu_states(const fs::path& dir, std::vector<std::string>& problems) {
  std::vector<GpuProcessState> out;
  const store::ProfileFiles& files = store::local_files();  // a recording's own directory
  if (files.kind(dir) != store::FileKind::directory) return out;
  auto entries = files.list(dir);
  if (!entries.ok()) {
    problems.push_back(entries.error().message);
    return out;
  }
  for (const store::FileEntry& entry : *entries) {
    if (entry.kind != store::FileKind::file || fs::path(entry.name).extension() != ".json") continue;
    std::string text;
    if (auto status = files.read(entry.path, text, 1 << 20); !status.ok()) {
      problems.push_back(status.error().message);
      continue;
    }
    auto state = parse_gpu_state(text, entry.path.string());
    if (!state.ok()) {
      problems.push_back(state.error().message);
      continue;
    }
    out.push_back(std::move(state).value());
  }
  std::sort(out.begin(), out.end(), [](const GpuProcessState& a, const GpuProcessState& b) { return a.pid < b.pid; });
  return out;
}

void set_gpu_section(store::Manifest& manifest, const GpuSection& s) {
  ordered_json j = {{"mode", s.mode}, {"enabled", s.enabled}};
  if (!s.library.empty()) j["library"] = s.library;
  j["cupti"] = s.cupti;
  if (!s.why_off.empty()) j["why_off"] = s.why_off;
  j["driver"] = s.driver;
  j["processes"] = ordered_json::array();
  for (const GpuProcessState& p : s.processes) j["processes"].push_back(state_json(p));
  store::set_section(manifest, GpuSection::kName, j.dump());
}

std::optional<GpuSection> gpu_section(const store::Manifest& manifest) {
  auto section = store::section_json(manifest, GpuSection::kName);
  if (!section) return std::nullopt;
  const json& j = *section;
  GpuSection s;
  get_string(j, "mode", s.mode);
  get_string(j, "library", s.library);
  get_string(j, "cupti", s.cupti);
  get_string(j, "why_off", s.why_off);
  if (auto it = j.find("enabled"); it != j.end() && it->is_boolean()) s.enabled = it->get<bool>();
  if (auto it = j.find("driver"); it != j.end() && it->is_boolean()) s.driver = it->get<bool>();
  if (auto it = j.find("processes"); it != j.end() && it->is_array()) {
    for (const json& p : *it) {
      if (p.is_object()) s.processes.push_back(state_from(p));
    }
  }
  return s;
}

}  // namespace sprof::gpu
