// What `sprof gpu` reads: a profile directory's GPU files with its step timeline, or a Chrome
// trace file with its ProfilerStep#N events.

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sprof/gpu_report.hpp"
#include "sprof/manifest.hpp"
#include "sprof/manifest_sections.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::report {
namespace fs = std::filesystem;

namespace {

// Why a profile has no GPU activity, from what record wrote into sprof.json's gpu section.
std::string why_no_gpu(const fs::path& dir) {
  auto manifest = store::read_manifest(dir);
  if (!manifest.ok()) return "";
  auto section = store::section_json(*manifest, "gpu");
  if (!section) return " (recorded by a sprof without GPU tracing)";
  const nlohmann::json& j = *section;
  if (!j.value("enabled", false)) return fmt::format(" (GPU tracing was off: {})", j.value("why_off", std::string("off")));
  auto processes = j.find("processes");
  if (processes == j.end() || !processes->is_array() || processes->empty()) {
    return " (no process of the command initialised CUDA)";
  }
  for (const auto& p : *processes) {
    if (p.is_object() && p.value("state", std::string()) != "recording") {
      return fmt::format(" (pid {}: {})", p.value("pid", 0), p.value("detail", std::string()));
    }
  }
  return "";
}

}  // namespace

Result<GpuInput> load_gpu_input(const fs::path& path) {
  GpuInput input;
  const store::ProfileFiles& files = store::files_for(path);
  store::FileKind kind = files.kind(path);
  if (kind == store::FileKind::missing) return make_error(ErrorKind::bad_input, "{}: no such file or directory", path.string());
  if (kind != store::FileKind::directory) {
    SPROF_TRY(input.trace, store::read_chrome_gpu_trace(path));
    for (const store::GpuTraceStep& s : input.trace.steps) input.steps.push_back({s.step, Mode::global, s.start_ns, s.end_ns});
    if (input.trace.empty()) {
      return make_error(ErrorKind::bad_input, "{}: no GPU events (kernel, gpu_memcpy, gpu_memset, cuda_runtime) in this trace",
                        path.string());
    }
    return input;
  }
  input.profile = true;
  SPROF_TRY(input.trace, store::read_gpu_activity(path));
  if (input.trace.empty()) {
    return make_error(ErrorKind::bad_input, "{}: no GPU activity was recorded{}", path.string(), why_no_gpu(path));
  }
  if (auto manifest = store::read_manifest(path); manifest.ok()) {
    input.epoch_offset_ns = manifest->clock_realtime_ns - manifest->clock_monotonic_ns;
  }
  auto timeline = timeline::read_step_timeline(path);
  if (timeline.ok()) {
    for (const timeline::ProcessTimeline& p : timeline->processes) {
      for (const timeline::Step& s : p.steps) input.steps.push_back({s.step, s.mode, s.begin_ns, s.end_ns});
    }
  } else {
    input.trace.warnings.push_back(timeline.error().message);
  }
  std::sort(input.steps.begin(), input.steps.end(),
            [](const GpuStepWindow& a, const GpuStepWindow& b) { return a.start_ns < b.start_ns; });
  return input;
}

bool GpuSelection::contains(int64_t t_ns) const {
  if (windows.empty()) return true;
  return std::any_of(windows.begin(), windows.end(), [&](const auto& w) { return t_ns >= w.first && t_ns < w.second; });
}

std::vector<std::pair<int64_t, int64_t>> step_windows(const std::vector<GpuStepWindow>& steps, std::optional<Mode> mode,
                                                      std::optional<int64_t> first, std::optional<int64_t> last) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const GpuStepWindow& s : steps) {
    if (mode && *mode != Mode::global && s.mode != *mode) continue;
    if (first && s.step < *first) continue;
    if (last && s.step > *last) continue;
    out.emplace_back(s.start_ns, s.end_ns);
  }
  return out;
}

}  // namespace sprof::report
