#include "sprof/sampled_profile.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <system_error>

#include "intervals/stats_builder.hpp"
#include "sprof/layout.hpp"
#include "sprof/manifest_sections.hpp"

namespace sprof::query {

using intervals::IntervalStats;
using intervals::StatsBuilder;
using intervals::TimeSpan;

namespace fs = std::filesystem;

const ProcessInterval& SampledProfile::interval_of(const store::StatsRecord& record) const {
  return intervals.at(static_cast<size_t>(&record - index.records.data()));
}

namespace {

std::optional<PythonTimer> timer_from_manifest(const store::Manifest& manifest) {
  auto section = store::interval_stats_section(manifest);
  if (!section || section->timer.empty()) return std::nullopt;
  return intervals::parse_python_timer(section->timer);
}

}  // namespace

Result<SampledProfile> load_sampled_profile(const store::ProfilePath& dir, const timeline::StepTimeline& timeline) {
  SampledProfile out;
  SPROF_TRY(out.samples, store::load_profile_samples(dir.path, std::nullopt, dir.files()));
  SPROF_TRY(out.intervals, intervals::plan_intervals(out.samples, timeline));
  if (out.samples.manifest) out.recorded_timer = timer_from_manifest(*out.samples.manifest);
  out.index.dir = dir.path;
  out.index.source = dir.source;
  out.index.level = store::ProfileLevel::root;
  out.index.records.reserve(out.intervals.size());
  for (const ProcessInterval& interval : out.intervals) {
    store::StatsRecord record;
    record.profiler = store::kCprofileName;
    record.framework = interval.framework;
    record.node_id = interval.node_id;
    record.dir_name = interval.dir_name;
    record.name = interval.name;
    record.path = dir.path / interval.relative_dir() / store::kCprofileStatsFile;
    record.sampled = true;
    out.index.records.push_back(std::move(record));
  }
  return out;
}

std::string thread_name(const store::LogThread& thread, int32_t pid) {
  if (thread.name.empty() && thread.native_tid != 0 && thread.native_tid == pid) return "MainThread";
  return thread.name;
}

bool thread_selected(const store::LogThread& thread, int32_t pid, const std::vector<std::string>& words) {
  if (words.empty()) return true;
  std::string name = thread_name(thread, pid);
  return std::any_of(words.begin(), words.end(), [&](const std::string& word) {
    return (!name.empty() && word == name) || (thread.native_tid != 0 && word == std::to_string(thread.native_tid));
  });
}

int32_t log_pid(const store::SampleLog& log) {
  return log.processes().empty() ? 0 : log.processes().front().pid;
}

Aggregate aggregate_samples(const SampledProfile& profile, const Selection& records,
                            PythonTimer timer, const std::vector<std::string>& threads) {
  Aggregate out;
  struct ProcessState {
    std::unique_ptr<StatsBuilder> builder;
    std::vector<uint8_t> kept;         // threads kept, when `threads` selects
    std::vector<double> thread_seconds;
    int32_t pid = 0;
  };
  std::map<size_t, ProcessState> processes;
  for (const store::StatsRecord* record : records) {
    const ProcessInterval& interval = profile.interval_of(*record);
    const store::SampleLog& log = profile.samples.processes[interval.process].log;
    ProcessState& state = processes[interval.process];
    if (!state.builder) {
      state.builder = std::make_unique<StatsBuilder>(log);
      state.pid = interval.pid;
      for (const store::LogThread& thread : log.threads()) state.kept.push_back(thread_selected(thread, interval.pid, threads));
    }
    IntervalStats stats = state.builder->build(interval.spans, timer, threads.empty() ? nullptr : &state.kept);
    if (state.thread_seconds.size() < stats.thread_seconds.size()) state.thread_seconds.resize(stats.thread_seconds.size());
    for (size_t t = 0; t < stats.thread_seconds.size(); ++t) state.thread_seconds[t] += stats.thread_seconds[t];
    out.table.add(stats.table);
    out.used.push_back(record);
    // Wall time: the spans' durations. The first and last intervals own all time before and after
    // them (open spans): theirs is what they cover of the sampled life, which starts at the attach
    // (the first sample's weight reaches back to it) and ends at the last sample.
    const int64_t life_begin =
        log.processes().empty() || log.processes().front().attach_ns == 0
            ? log.first_ns()
            : std::min(log.first_ns(), log.processes().front().attach_ns);
    for (const TimeSpan& span : interval.spans) {
      int64_t begin = span.begin_ns == INT64_MIN ? life_begin : span.begin_ns;
      int64_t end = span.end_ns == INT64_MAX ? log.last_ns() : span.end_ns;
      if (end > begin) out.wall_seconds += static_cast<double>(end - begin) / 1e9;
    }
  }
  for (const auto& [process, state] : processes) {
    const store::ProcessSamples& samples = profile.samples.processes[process];
    for (size_t t = 0; t < state.thread_seconds.size(); ++t) {
      if (state.thread_seconds[t] <= 0) continue;
      ThreadTime time;
      time.pid = state.pid;
      if (t < samples.log.threads().size()) {
        time.tid = samples.log.threads()[t].native_tid;
        time.name = thread_name(samples.log.threads()[t], state.pid);
      }
      time.seconds = state.thread_seconds[t];
      out.threads.push_back(std::move(time));
    }
  }
  std::stable_sort(out.threads.begin(), out.threads.end(),
                   [](const ThreadTime& a, const ThreadTime& b) { return a.seconds > b.seconds; });
  out.total_calls = out.table.total_calls();
  out.primitive_calls = out.table.primitive_calls();
  out.total_tt = out.table.total_tt();
  return out;
}

SampleFilter selection_filter(const SampledProfile& profile, const Selection& records,
                                      PythonTimer timer) {
  SampleFilter filter;
  filter.include_idle = timer != PythonTimer::cpu_time;
  filter.idle_only = timer == PythonTimer::off_cpu_time;
  std::vector<SampleWindow> windows;
  for (const store::StatsRecord* record : records) {
    const ProcessInterval& interval = profile.interval_of(*record);
    for (const TimeSpan& span : interval.spans) windows.push_back({interval.pid, span.begin_ns, span.end_ns});
  }
  std::sort(windows.begin(), windows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.pid, a.begin_ns) < std::tie(b.pid, b.begin_ns);
  });
  filter.windows = std::move(windows);
  return filter;
}

}  // namespace sprof::query
