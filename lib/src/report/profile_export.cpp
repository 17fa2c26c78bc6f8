// sprof export: a profile's samples as stacks, or the profile as one Chrome trace.

#include "sprof/profile_export.hpp"

#include <algorithm>
#include <climits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sprof/chrome_trace.hpp"
#include "sprof/sampled_profile.hpp"

namespace sprof::report {
namespace {

// The Python stacks, steps and GPU work of the selected processes and windows.
Result<ExportedProfile> export_chrome(const query::Profile& profile, const store::ProfileSamples& samples,
                                      const query::SampleFilter& filter, const ExportRequest& request) {
  SPROF_TRY(const store::GpuTrace* gpu, profile.gpu_activity());
  for (const std::string& warning : gpu->warnings) spdlog::warn("{}", warning);
  auto timeline = profile.step_timeline();
  if (!timeline.ok()) spdlog::warn("{}", timeline.error().message);
  ChromeTraceParts parts;
  parts.samples = &samples;
  parts.gpu = gpu;
  parts.steps = timeline.ok() ? *timeline : nullptr;
  parts.filter = filter;
  if (filter.windows && !filter.windows->empty()) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& w : *filter.windows) {
      first = std::min(first, w.begin_ns);
      last = std::max(last, w.end_ns);
    }
    parts.range_ns = std::make_pair(first, last);
  }
  if (samples.manifest) parts.epoch_offset_ns = samples.manifest->epoch_offset_ns();
  ExportedProfile out;
  ChromeTraceCounts counts = write_chrome_trace(parts, out.text);
  out.what = fmt::format("{} events: {} Python slices, {} steps, {} GPU operations, {} CUDA calls", counts.events,
                         counts.python_slices, counts.steps, counts.gpu_ops, counts.api_calls);
  if (counts.annotations > 0) out.what += fmt::format(", {} tasks, markers and counters", counts.annotations);
  out.what += "; Python slices: " + request.view.describe();
  return out;
}

}  // namespace

Result<std::string> export_format(std::string_view format, std::string_view output) {
  if (!format.empty()) return format == "raw" ? std::string("collapsed") : std::string(format);
  if (output.ends_with(".speedscope.json")) return std::string("speedscope");
  if (output.ends_with(".svg")) return std::string("flamegraph");
  if (output.ends_with(".json") || output.ends_with(".json.gz")) return std::string("chrome");
  if (output.ends_with(".folded") || output.ends_with(".collapsed") || output.ends_with(".txt")) {
    return std::string("collapsed");
  }
  return make_error(ErrorKind::usage, "export: give -f collapsed, -f speedscope, -f flamegraph or -f chrome{}",
                    output == "-" ? "" : fmt::format(" (cannot tell from the name {})", output));
}

Result<ExportedProfile> export_profile(const query::Profile& profile, const ExportRequest& request) {
  SPROF_TRY(const store::ProfileSamples* read, profile.samples());
  const store::ProfileSamples& samples = *read;
  query::SampleFilter filter = time_view_filter(request.view, samples);
  filter.gil_only = request.gil_only;
  filter.windows = request.windows;
  if (request.pid != 0) {
    filter.pid = request.pid;
    bool known = std::any_of(samples.processes.begin(), samples.processes.end(),
                             [&](const auto& p) { return p.log.pid() == request.pid; });
    if (!known) {
      return make_error(ErrorKind::usage, "--pid {}: no samples of that process in {}", request.pid, profile.dir().string());
    }
  }
  if (request.format == "chrome") return export_chrome(profile, samples, filter, request);
  std::optional<StackFormat> format = parse_stack_format(request.format);
  if (!format) return make_error(ErrorKind::usage, "export: unknown format {}", request.format);
  std::string title = !request.title.empty()
                          ? request.title
                          : fmt::format("{}: {}{}{}", profile.dir().string(), request.view.describe(),
                                        request.gil_only ? ", GIL holders" : "",
                                        request.pid != 0 ? fmt::format(", pid {}", request.pid) : "");
  ExportedProfile out;
  uint64_t written = write_stacks(*format, samples, filter, title, out.text);
  if (written == 0) spdlog::warn("no samples matched ({}: --all-threads reads every thread)", request.view.describe());
  out.what = fmt::format("{} samples, {}", written, request.view.describe());
  return out;
}

ExportedProfile export_selection_stacks(const query::StatsSource& source, const query::Selection& selection,
                                        StackFormat format, const std::string& title) {
  const query::SampledProfile& sampled = *source.sampled();
  const intervals::PythonTimer timer = *source.timer();
  ExportedProfile out;
  uint64_t written = write_stacks(format, sampled.samples, query::selection_filter(sampled, selection, timer),
                                  fmt::format("{} ({})", title, intervals::to_string(timer)), out.text);
  if (written == 0) spdlog::warn("no samples in the selected intervals (timer {})", intervals::to_string(timer));
  out.what = fmt::format("{} samples, {}", written, intervals::to_string(timer));
  return out;
}

}  // namespace sprof::report
