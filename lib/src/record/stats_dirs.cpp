#include <cstdint>
#include <string_view>

#include "sprof/layout.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/recorder.hpp"
#include "sprof/step_timeline.hpp"
#include "sprof/temp_dir.hpp"

namespace sprof::recorder {

// sprof.json's errors entry for a recording stats-dirs finished.
constexpr std::string_view kRecoveredNote =
    "the recording did not finish; stats-dirs took its processes and end time from the sample logs";

Result<StatsDirsResult> rewrite_stats_directories(const std::filesystem::path& dir, const StatsDirsPlan& plan) {
  if (!store::detect(dir).raw_samples()) {
    return make_error(ErrorKind::usage, "{} is not a sprof profile root (it needs sprof.json and samples/)",
                      dir.string());
  }
  if (plan.window && plan.every_interval) {
    return make_error(ErrorKind::usage, "--every-interval and the --python-* window flags are mutually exclusive");
  }
  SPROF_TRY(store::ProfileSamples profile, store::load_profile_samples(dir));
  SPROF_TRY(timeline::StepTimeline timeline, timeline::read_step_timeline(dir));
  window::ProfilingWindow chosen;
  if (plan.window) {
    chosen = *plan.window;
  } else if (!plan.every_interval) {
    // The window record used, so that rewriting with another timer keeps it.
    SPROF_TRY(chosen, window::recorded_window(*profile.manifest, (dir / store::kManifestFileName).string()));
  }
  // Resolved per process against its steps, as record does (smdebug's lazily filled fields).
  window::TimelineWindows windows(chosen, timeline,
                                  profile.manifest->epoch_offset_ns());
  intervals::WriteOptions options;
  options.timer = plan.timer;
  options.window = chosen.describe();
  if (plan.empty_dirs) options.max_empty_directories = SIZE_MAX;
  options.progress = plan.progress;
  options.include = [&](const intervals::ProcessInterval& interval) {
    return windows.contains(interval.pid, interval.interval);
  };
  StatsDirsResult result;
  SPROF_TRY(result.summary, intervals::write_interval_stats(profile, timeline, options));

  // Keep sprof.json's account of the stats directories true.
  store::Manifest manifest = std::move(*profile.manifest);
  intervals::set_manifest_section(manifest, result.summary, options);
  if (manifest.state == "recording") {
    // load_profile_samples filled in the processes and the end from the sample logs.
    manifest.state = store::kRecoveredState;
    manifest.errors.emplace_back(kRecoveredNote);
    result.recovered = true;
  }
  SPROF_TRY_STATUS(store::write_manifest(dir, manifest));
  return result;
}

Result<StatsDirsAtResult> rewrite_stats_directories_at(const store::ProfilePath& dir, const StatsDirsPlan& plan,
                                                       const remote::S3Options& s3) {
  StatsDirsAtResult out;
  if (dir.source == nullptr) {
    SPROF_TRY(out.rewrite, rewrite_stats_directories(dir.path, plan));
    return out;
  }
  SPROF_TRY(TempDir scratch, TempDir::create("sprof-stats-dirs-"));
  SPROF_TRY(remote::ProfileCopy copy, remote::copy_s3_profile(dir, scratch.path()));
  SPROF_TRY(out.rewrite, rewrite_stats_directories(copy.dir, plan));
  SPROF_TRY(out.put_back, remote::put_back(copy, s3));
  return out;
}

}  // namespace sprof::recorder
