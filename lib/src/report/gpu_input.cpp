// What `sprof gpu` reads: a profile directory's GPU files with its step timeline, or a Chrome
// trace file with its ProfilerStep#N events.

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/launch_calls.hpp"
#include "sprof/gpu_report.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/manifest_sections.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::report {
namespace fs = std::filesystem;

namespace {

// Why a profile has no GPU activity, from what record wrote into sprof.json's gpu section.
std::string why_no_gpu(const query::Profile& profile) {
  auto manifest = profile.manifest();
  if (!manifest.ok()) return "";
  auto section = store::section_json(**manifest, "gpu");
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

// Starts up and ends down to a whole µs, as HTA's round_down_time_stamps (an end before its start
// becomes the start: a zero-length event).
void round_to_us(int64_t& start_ns, int64_t& end_ns) {
  auto floor_div = [](int64_t a) { return a / 1000 - (a % 1000 < 0 ? 1 : 0); };
  int64_t start_us = -floor_div(-start_ns);
  int64_t end_us = floor_div(end_ns);
  start_ns = start_us * 1000;
  end_ns = std::max(start_ns, end_us * 1000);
}

void round_trace_to_us(GpuInput& input) {
  store::GpuTrace& t = input.trace;
  for (store::GpuOp& op : t.ops) round_to_us(op.start_ns, op.end_ns);
  for (store::GpuApiCall& call : t.api_calls) round_to_us(call.start_ns, call.end_ns);
  for (store::GpuSync& sync : t.syncs) round_to_us(sync.start_ns, sync.end_ns);
  for (store::GpuOverhead& o : t.overheads) round_to_us(o.start_ns, o.end_ns);
  for (GpuStepWindow& step : input.steps) {
    int64_t iteration_end = step.end_ns;
    round_to_us(step.iteration_start_ns, iteration_end);
    round_to_us(step.start_ns, step.end_ns);
  }
  store::sort_gpu_trace(t);
}

// HTA's _filter_irrelevant_gpu_kernels without include_last_profiler_step; like HTA, a trace
// without steps keeps everything.
void drop_last_step(GpuInput& input, const fs::path& path) {
  if (input.steps.empty()) {
    input.trace.warnings.push_back(fmt::format("--drop-last-step: {} has no steps ({}): nothing left out", path.string(),
                                               input.profile ? "no step markers" : "no ProfilerStep#N events"));
    return;
  }
  int64_t last_start = input.steps.back().start_ns;
  input.steps.pop_back();
  store::GpuTrace& t = input.trace;
  LaunchCalls calls(t);
  std::erase_if(t.ops, [&](const store::GpuOp& op) {
    const store::GpuApiCall* call = calls.of(op);
    return call == nullptr || call->start_ns >= last_start;
  });
  std::erase_if(t.syncs, [&](const store::GpuSync& s) { return s.start_ns >= last_start; });
  std::erase_if(t.api_calls, [&](const store::GpuApiCall& c) { return c.start_ns >= last_start; });
}

// A Chrome trace file with its ProfilerStep#N events.
Result<GpuInput> load_trace_file(const fs::path& path, const store::ProfileFiles& files) {
  GpuInput input;
  SPROF_TRY(input.trace, store::read_chrome_gpu_trace(path, files));
  for (const store::GpuTraceStep& s : input.trace.steps) {
    input.steps.push_back({s.step, Mode::global, s.start_ns, s.end_ns, s.start_ns, 0});
  }
  if (input.trace.empty()) {
    return make_error(ErrorKind::bad_input, "{}: no GPU events (kernel, gpu_memcpy, gpu_memset, cuda_runtime) in this trace",
                      path.string());
  }
  return input;
}

// A profile's gpu/ files, cut by its step timeline.
Result<GpuInput> load_profile_gpu(const query::Profile& profile) {
  GpuInput input;
  input.profile = profile;
  SPROF_TRY(const store::GpuTrace* trace, profile.gpu_activity());
  input.trace = *trace;
  if (input.trace.empty()) {
    return make_error(ErrorKind::bad_input, "{}: no GPU activity was recorded{}", profile.dir().string(), why_no_gpu(profile));
  }
  input.epoch_offset_ns = profile.epoch_offset_ns();
  auto timeline = profile.step_timeline();
  if (timeline.ok()) {
    for (const timeline::ProcessTimeline& p : (*timeline)->processes) {
      // As rules::iterations: from the latest end of the process's earlier steps (of any mode).
      std::optional<int64_t> latest_end;
      for (const timeline::Step& s : p.steps) {
        int64_t iteration_start = latest_end ? std::min(*latest_end, s.begin_ns) : s.begin_ns;
        input.steps.push_back({s.step, s.mode, s.begin_ns, s.end_ns, iteration_start, p.pid});
        latest_end = std::max(latest_end.value_or(s.end_ns), s.end_ns);
      }
    }
  } else {
    input.trace.warnings.push_back(timeline.error().message);
  }
  std::sort(input.steps.begin(), input.steps.end(),
            [](const GpuStepWindow& a, const GpuStepWindow& b) { return a.start_ns < b.start_ns; });
  return input;
}

GpuInput with_options(GpuInput input, const fs::path& path, const GpuLoadOptions& options) {
  if (options.round_us) round_trace_to_us(input);
  if (options.drop_last_step) drop_last_step(input, path);
  return input;
}

}  // namespace

Result<GpuInput> load_gpu_input(const store::ProfilePath& where, const GpuLoadOptions& options) {
  const fs::path& path = where.path;
  store::FileKind kind = where.files().kind(path);
  if (kind == store::FileKind::missing) return make_error(ErrorKind::bad_input, "{}: no such file or directory", path.string());
  if (kind != store::FileKind::directory) {
    SPROF_TRY(GpuInput input, load_trace_file(path, where.files()));
    return with_options(std::move(input), path, options);
  }
  SPROF_TRY(query::Profile profile, query::Profile::open(where));
  return load_gpu_input(profile, options);
}

Result<GpuInput> load_gpu_input(const query::Profile& profile, const GpuLoadOptions& options) {
  SPROF_TRY(GpuInput input, load_profile_gpu(profile));
  return with_options(std::move(input), profile.dir(), options);
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

Result<GpuSelection> select_gpu_work(const GpuInput& input, int device, const query::RunSelection& selection,
                                     const std::string& path) {
  GpuSelection out;
  if (device >= 0) {
    out.device = device;
    bool known = std::any_of(input.trace.ops.begin(), input.trace.ops.end(), [&](const auto& op) { return op.device == device; });
    if (!known) return make_error(ErrorKind::usage, "--device {}: no GPU work on that device in {}", device, path);
  }
  if (selection.steps) {
    if (input.steps.empty()) {
      return make_error(ErrorKind::usage, "{}: no steps are known ({}), so steps cannot select GPU work", path,
                        input.profile ? "the profile has no step markers" : "the trace has no ProfilerStep#N events");
    }
    const query::StepRange& steps = *selection.steps;
    out.windows = step_windows(input.steps, steps.mode, steps.first, steps.last);
    if (out.windows.empty()) return make_error(ErrorKind::usage, "no step of {} matches the step flags", path);
  }
  if (selection.times) out.windows.push_back(selection.times->clock_window(input.epoch_offset_ns));
  return out;
}

}  // namespace sprof::report
