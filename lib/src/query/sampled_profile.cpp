#include "sprof/sampled_profile.hpp"

#include <algorithm>
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

Result<SampledProfile> load_sampled_profile(const fs::path& dir, const timeline::StepTimeline& timeline) {
  SampledProfile out;
  SPROF_TRY(out.samples, store::load_profile_samples(dir));
  SPROF_TRY(out.intervals, intervals::plan_intervals(out.samples, timeline));
  if (out.samples.manifest) out.recorded_timer = timer_from_manifest(*out.samples.manifest);
  out.index.dir = dir;
  out.index.level = store::ProfileLevel::root;
  out.index.records.reserve(out.intervals.size());
  for (const ProcessInterval& interval : out.intervals) {
    store::StatsRecord record;
    record.profiler = store::kCprofileName;
    record.framework = interval.framework;
    record.node_id = interval.node_id;
    record.dir_name = interval.dir_name;
    record.name = interval.name;
    record.path = dir / interval.relative_dir() / store::kCprofileStatsFile;
    out.index.records.push_back(std::move(record));
  }
  return out;
}

Aggregate aggregate_samples(const SampledProfile& profile, const Selection& records,
                                   PythonTimer timer) {
  Aggregate out;
  std::map<size_t, std::unique_ptr<StatsBuilder>> builders;
  for (const store::StatsRecord* record : records) {
    const ProcessInterval& interval = profile.interval_of(*record);
    auto& builder = builders[interval.process];
    if (!builder) builder = std::make_unique<StatsBuilder>(profile.samples.processes[interval.process].log);
    IntervalStats stats = builder->build(interval.spans, timer);
    out.table.add(stats.table);
    out.used.push_back(record);
  }
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
