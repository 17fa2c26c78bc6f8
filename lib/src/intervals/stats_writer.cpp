// Writing the stats directories of every (selected) interval.

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "intervals/stats_builder.hpp"
#include "sprof/interval_query.hpp"
#include "sprof/interval_stats.hpp"
#include "sprof/profile.hpp"
#include "store/file_bytes.hpp"

namespace sprof::intervals {

namespace fs = std::filesystem;

std::string WriteSummary::text() const {
  std::string out = fmt::format("{} stats director{} ({} samples)", directories, directories == 1 ? "y" : "ies",
                                samples);
  if (excluded > 0) out += fmt::format(", {} interval{} outside the profiling window", excluded, excluded == 1 ? "" : "s");
  if (removed > 0) out += fmt::format(" ({} written before removed)", removed);
  return out;
}

Result<WriteSummary> write_interval_stats(const store::ProfileSamples& profile, const bootstrap::StepTimeline& timeline,
                                          const WriteOptions& options) {
  SPROF_TRY(std::vector<ProcessInterval> planned, plan_intervals(profile, timeline));
  WriteSummary summary;
  summary.intervals = planned.size();
  std::map<size_t, std::unique_ptr<StatsBuilder>> builders;  // per process
  std::set<fs::path> written;
  for (const ProcessInterval& interval : planned) {
    fs::path dir = profile.dir / interval.relative_dir();
    if (options.include && !options.include(interval)) {
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
    if (!written.insert(dir).second) {
      // Two intervals of one process whose ends fall in the same microseconds.
      spdlog::warn("{}: a second interval with the same name; kept the first", dir.string());
      continue;
    }
    auto& builder = builders[interval.process];
    if (!builder) builder = std::make_unique<StatsBuilder>(profile.processes[interval.process].log);
    IntervalStats stats = builder->build(interval.spans, options.timer);

    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", dir.string(), ec.message());
    if (stats.samples == 0) ++summary.without_samples;
    SPROF_TRY_STATUS(store::write_pstats(dir / store::kCprofileStatsFile, stats.table));
    SPROF_TRY_STATUS(store::write_file_atomically(dir / store::kPyinstrumentJsonFile,
                                                  render_tree_json(profile, interval, stats, options.timer)));
    SPROF_TRY_STATUS(store::write_file_atomically(dir / store::kPyinstrumentHtmlFile,
                                                  render_tree_html(profile, interval, stats, options.timer)));
    ++summary.directories;
    summary.samples += stats.samples;
  }
  return summary;
}

void set_manifest_section(store::Manifest& manifest, const WriteSummary& summary, const WriteOptions& options) {
  nlohmann::ordered_json section;
  section["profiler"] = kSampledProfilerDir;
  section["timer"] = std::string(to_string(options.timer));
  section["window"] = options.window;
  section["intervals"] = summary.intervals;
  section["directories"] = summary.directories;
  section["excluded"] = summary.excluded;
  section["without_samples"] = summary.without_samples;
  auto& extra = manifest.extra;
  extra.erase(std::remove_if(extra.begin(), extra.end(), [](const auto& e) { return e.first == kManifestSection; }),
              extra.end());
  extra.emplace_back(kManifestSection, section.dump());
}

}  // namespace sprof::intervals
