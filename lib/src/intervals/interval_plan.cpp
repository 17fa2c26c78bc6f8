// Which samples make up which stats directory: the step timeline's intervals per sampled
// process, dated in epoch microseconds and cut into the sample-time spans they own.

#include <algorithm>
#include <limits>

#include "sprof/interval_stats.hpp"
#include "sprof/manifest.hpp"
#include "sprof/profile.hpp"

namespace sprof::intervals {
namespace {

store::StepPoint step_point(const timeline::Boundary& b, const store::Manifest& manifest) {
  store::StepPoint point;
  point.mode = b.mode;
  point.step = b.step;
  point.phase = b.phase;
  // Integer nanoseconds first (no precision lost), then microseconds as smdebug's float.
  int64_t epoch_ns = b.t_ns + manifest.epoch_offset_ns();
  point.time_us = static_cast<double>(epoch_ns) / 1000.0;
  return point;
}

// [begin, end) less the paused ranges (which may overlap each other).
std::vector<TimeSpan> cut_spans(TimeSpan whole, std::vector<timeline::TimeRange> paused) {
  std::sort(paused.begin(), paused.end(),
            [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; });
  std::vector<TimeSpan> out;
  int64_t at = whole.begin_ns;
  for (const auto& p : paused) {
    if (p.end_ns <= at || p.begin_ns >= whole.end_ns) continue;
    if (p.begin_ns > at) out.push_back({at, p.begin_ns});
    at = std::max(at, p.end_ns);
  }
  if (at < whole.end_ns) out.push_back({at, whole.end_ns});
  return out;
}

}  // namespace

std::string_view to_string(PythonTimer timer) {
  switch (timer) {
    case PythonTimer::total_time: return "total_time";
    case PythonTimer::cpu_time: return "cpu_time";
    case PythonTimer::off_cpu_time: return "off_cpu_time";
  }
  return "total_time";
}

std::optional<PythonTimer> parse_python_timer(std::string_view text) {
  for (PythonTimer t : {PythonTimer::total_time, PythonTimer::cpu_time, PythonTimer::off_cpu_time}) {
    if (text == to_string(t)) return t;
  }
  return std::nullopt;
}

std::filesystem::path ProcessInterval::relative_dir() const {
  return store::stats_dir_path(framework, kSampledProfilerDir, node_id, dir_name);
}

Result<std::vector<ProcessInterval>> plan_intervals(const store::ProfileSamples& profile,
                                                    const timeline::StepTimeline& timeline) {
  if (!profile.manifest) {
    return make_error(ErrorKind::bad_input, "{}: no {}, so the samples cannot be dated for stats directories",
                      profile.dir.string(), store::kManifestFileName);
  }
  const store::Manifest& manifest = *profile.manifest;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<ProcessInterval> out;
  for (size_t index = 0; index < profile.processes.size(); ++index) {
    const store::ProcessSamples& p = profile.processes[index];
    if (p.log.sample_count() == 0) continue;
    const int32_t pid = p.log.pid();
    const std::string node_id =
        p.process != nullptr && !p.process->node_id.empty() ? p.process->node_id : p.node_id;
    // Both come from files (sprof.json, the markers) and name directories stats-dirs writes.
    SPROF_TRY_STATUS(store::check_path_component(
        node_id, fmt::format("{}: node_id of pid {}", (profile.dir / store::kManifestFileName).string(), pid)));

    std::vector<timeline::Interval> whole_life;
    const std::vector<timeline::Interval>* intervals = &whole_life;  // not copied: a long job has many
    std::vector<timeline::TimeRange> paused;
    std::string framework = "python";
    const timeline::ProcessTimeline* tl = timeline.find(pid);
    if (tl != nullptr && !tl->intervals.empty()) {
      intervals = &tl->intervals;
      paused = tl->paused;
      if (!tl->framework.empty()) framework = tl->framework;
    } else {
      // No markers: the process's whole life is one interval, as smdebug's pre-step-zero
      // profiling would have covered it had the hook never seen a step.
      int64_t begin = p.process != nullptr && p.process->attach_ns > 0 ? p.process->attach_ns : p.log.first_ns();
      int64_t end = p.process != nullptr && p.process->detach_ns > 0 ? p.process->detach_ns : p.log.last_ns();
      end = std::max(end, begin + 1);
      timeline::Interval whole;
      whole.kind = timeline::IntervalKind::pre_step_zero;
      whole.start = {Mode::prestepzero, std::nullopt, Phase::start, begin};
      whole.end = {Mode::posthookclose, std::nullopt, Phase::end, end};
      whole_life.push_back(whole);
    }

    SPROF_TRY_STATUS(store::check_path_component(
        framework, fmt::format("{}: framework of pid {}", (profile.dir / "markers").string(), pid)));
    const bool from_timeline = tl != nullptr && !tl->intervals.empty();
    out.reserve(out.size() + intervals->size());
    for (size_t i = 0; i < intervals->size(); ++i) {
      const timeline::Interval& interval = (*intervals)[i];
      ProcessInterval pi;
      if (from_timeline) pi.timeline_index = i;
      pi.process = index;
      pi.pid = pid;
      pi.node_id = node_id;
      pi.framework = framework;
      pi.interval = interval;
      pi.name.format = store::NameFormat::current;
      pi.name.start = step_point(interval.start, manifest);
      pi.name.end = step_point(interval.end, manifest);
      pi.dir_name = store::format_stats_dir_name(pi.name);
      TimeSpan whole{interval.start.t_ns, interval.end.t_ns};
      if (interval.start.phase == Phase::start) whole.begin_ns = kMin;
      if (interval.end.phase == Phase::end) whole.end_ns = kMax;
      pi.spans = cut_spans(whole, paused);
      out.push_back(std::move(pi));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ProcessInterval& a, const ProcessInterval& b) {
    if (a.name.start.time_us != b.name.start.time_us) return a.name.start.time_us < b.name.start.time_us;
    if (a.node_id != b.node_id) return a.node_id < b.node_id;
    return a.dir_name < b.dir_name;
  });
  return out;
}

}  // namespace sprof::intervals
