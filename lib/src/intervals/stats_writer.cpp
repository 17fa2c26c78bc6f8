// Writing the stats directories of every (selected) interval.

#include <algorithm>
#include <map>
#include <memory>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "intervals/stats_builder.hpp"
#include "sprof/manifest_sections.hpp"
#include "sprof/interval_stats.hpp"
#include "sprof/profile.hpp"
#include "sprof/file_bytes.hpp"

namespace sprof::intervals {

namespace fs = std::filesystem;

std::string WriteSummary::text() const {
  std::string out = fmt::format("{} stats director{} ({} samples)", directories, directories == 1 ? "y" : "ies",
                                samples);
  if (excluded > 0) out += fmt::format(", {} interval{} outside the profiling window", excluded, excluded == 1 ? "" : "s");
  if (removed > 0) out += fmt::format(" ({} written before removed)", removed);
  if (empty_not_written > 0) {
    out += fmt::format("; {} intervals without a sample got none (too many; stats-dirs --empty-dirs writes them)",
                       empty_not_written);
  }
  if (interrupted) out += fmt::format("; stopped after {} of {}", directories, to_write);
  return out;
}

namespace {

// Which included intervals name a directory an earlier one names too (two intervals of one
// process whose ends fall in the same microseconds): the first keeps it. By sorting their
// numbers: a set of their paths took half a kilobyte an interval, and a long job has many.
std::vector<uint8_t> repeated_directories(const std::vector<ProcessInterval>& planned,
                                          const std::vector<uint8_t>& included) {
  std::vector<uint32_t> order;
  for (size_t i = 0; i < planned.size(); ++i) {
    if (included[i]) order.push_back(static_cast<uint32_t>(i));
  }
  auto key = [&](uint32_t i) {
    const ProcessInterval& p = planned[i];
    return std::tie(p.framework, p.node_id, p.dir_name);
  };
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    auto ka = key(a), kb = key(b);
    return ka != kb ? ka < kb : a < b;
  });
  std::vector<uint8_t> repeated(planned.size(), 0);
  for (size_t k = 1; k < order.size(); ++k) {
    if (key(order[k]) == key(order[k - 1])) repeated[order[k]] = 1;
  }
  return repeated;
}

}  // namespace

Result<WriteSummary> write_interval_stats(const store::ProfileSamples& profile, const timeline::StepTimeline& timeline,
                                          const WriteOptions& options) {
  SPROF_TRY(std::vector<ProcessInterval> planned, plan_intervals(profile, timeline));
  WriteSummary summary;
  summary.intervals = planned.size();
  std::map<size_t, std::unique_ptr<StatsBuilder>> builders;  // per process
  auto builder_of = [&](size_t process) -> StatsBuilder& {
    auto& builder = builders[process];
    if (!builder) builder = std::make_unique<StatsBuilder>(profile.processes[process].log);
    return *builder;
  };

  // First which intervals are in, and which of them kept no sample: past the limit those get no
  // directory, so the work scales with the samples rather than with the steps.
  std::vector<uint8_t> included(planned.size(), 1);
  if (options.include) {
    for (size_t i = 0; i < planned.size(); ++i) included[i] = options.include(planned[i]) ? 1 : 0;
  }
  const std::vector<uint8_t> repeated = repeated_directories(planned, included);
  std::vector<const ProcessInterval*> chosen;
  std::vector<uint8_t> empty;
  for (size_t i = 0; i < planned.size(); ++i) {
    const ProcessInterval& interval = planned[i];
    if (!included[i]) {
      fs::path dir = profile.dir / interval.relative_dir();
      ++summary.excluded;
      // Rewriting with another window: what an earlier run wrote for this interval goes, so the
      // directories are those of the window asked for (the samples they came from stay).
      std::error_code ec;
      if (fs::exists(dir, ec)) {
        for (const char* name : {store::kCprofileStatsFile, store::kPyinstrumentJsonFile, store::kPyinstrumentHtmlFile}) {
          fs::remove(dir / name, ec);
        }
        if (fs::remove(dir, ec)) ++summary.removed;  // only when nothing else is in it
      }
      continue;
    }
    if (repeated[i]) {
      spdlog::warn("{}: a second interval with the same name; kept the first",
                   (profile.dir / interval.relative_dir()).string());
      continue;
    }
    chosen.push_back(&interval);
    bool none = builder_of(interval.process).kept_samples(interval.spans, options.timer) == 0;
    empty.push_back(none ? 1 : 0);
    if (none) ++summary.without_samples;
  }
  bool skip_empty = summary.without_samples > options.max_empty_directories;
  if (skip_empty) summary.empty_not_written = summary.without_samples;
  summary.to_write = chosen.size() - summary.empty_not_written;

  size_t next_report = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (skip_empty && empty[i] != 0) continue;
    if (options.progress && summary.directories >= next_report) {
      if (!options.progress(summary.directories, summary.to_write)) {
        summary.interrupted = true;
        return summary;
      }
      next_report = summary.directories + 64;
    }
    const ProcessInterval& interval = *chosen[i];
    IntervalStats stats = builder_of(interval.process).build(interval.spans, options.timer);
    fs::path dir = profile.dir / interval.relative_dir();
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", dir.string(), ec.message());
    SPROF_TRY_STATUS(store::write_pstats(dir / store::kCprofileStatsFile, stats.table));
    SPROF_TRY_STATUS(store::write_file_atomically(dir / store::kPyinstrumentJsonFile,
                                                  render_tree_json(profile, interval, stats, options.timer)));
    SPROF_TRY_STATUS(store::write_file_atomically(dir / store::kPyinstrumentHtmlFile,
                                                  render_tree_html(profile, interval, stats, options.timer)));
    ++summary.directories;
    summary.samples += stats.samples;
  }
  if (options.progress) options.progress(summary.directories, summary.to_write);
  return summary;
}

void set_manifest_section(store::Manifest& manifest, const WriteSummary& summary, const WriteOptions& options) {
  store::IntervalStatsSection section;
  section.profiler = kSampledProfilerDir;
  section.timer = std::string(to_string(options.timer));
  section.window = options.window;
  section.intervals = summary.intervals;
  section.directories = summary.directories;
  section.excluded = summary.excluded;
  section.without_samples = summary.without_samples;
  section.without_samples_not_written = summary.empty_not_written;
  // false: stopped early (a signal); `sprof stats-dirs` writes them all.
  section.finished = !summary.interrupted;
  store::set_section(manifest, section);
}

}  // namespace sprof::intervals
