// sprof stats-dirs: (re)write the per-interval stats directories of a recorded profile from its
// raw samples and step timeline, e.g. with another timer or another profiling window, as record
// does at its end.

#include <fmt/format.h>

#include "command.hpp"
#include "progress_line.hpp"
#include "sprof/interval_stats.hpp"
#include "sprof/layout.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/python_profiling.hpp"
#include "sprof/step_timeline.hpp"
#include "window_flags.hpp"

namespace sprof::cli {
namespace {

struct StatsDirsFlags {
  std::string dir;
  std::string python_timer = "total_time";
  WindowFlags window;
  bool every_interval = false;
  bool empty_dirs = false;
};

Result<int> run_stats_dirs(const StatsDirsFlags& flags) {
  if (!store::detect(flags.dir).raw_samples()) {
    return make_error(ErrorKind::usage, "{} is not a sprof profile root (it needs sprof.json and samples/)",
                      flags.dir);
  }
  SPROF_TRY(std::optional<window::ProfilingWindow> flag_window, window_from_flags(flags.window));
  if (flag_window && flags.every_interval) {
    return make_error(ErrorKind::usage, "--every-interval and the --python-* window flags are mutually exclusive");
  }
  SPROF_TRY(store::ProfileSamples profile, store::load_profile_samples(flags.dir));
  SPROF_TRY(timeline::StepTimeline timeline, timeline::read_step_timeline(flags.dir));
  window::ProfilingWindow chosen;
  if (flag_window) {
    chosen = *flag_window;
  } else if (!flags.every_interval) {
    // The window record used, so that rewriting with another timer keeps it.
    SPROF_TRY(chosen, window::recorded_window(*profile.manifest, flags.dir + "/sprof.json"));
  }
  // Resolved per process against its steps, as record does (smdebug's lazily filled fields).
  window::TimelineWindows windows(chosen, timeline,
                                  profile.manifest->clock_realtime_ns - profile.manifest->clock_monotonic_ns);
  intervals::WriteOptions options;
  options.timer = *intervals::parse_python_timer(flags.python_timer);
  options.window = chosen.describe();
  if (flags.empty_dirs) options.max_empty_directories = SIZE_MAX;
  options.progress = stats_directories_progress();
  options.include = [&](const intervals::ProcessInterval& interval) {
    return windows.contains(interval.pid, interval.interval);
  };
  SPROF_TRY(intervals::WriteSummary summary, intervals::write_interval_stats(profile, timeline, options));

  // Keep sprof.json's account of the stats directories true.
  store::Manifest manifest = std::move(*profile.manifest);
  intervals::set_manifest_section(manifest, summary, options);
  if (manifest.state == "recording") {
    // load_profile_samples filled in the processes and the end from the sample logs.
    manifest.state = store::kRecoveredState;
    manifest.errors.push_back(
        "the recording did not finish; stats-dirs took its processes and end time from the sample logs");
    if (!global_options().quiet) fmt::print(stderr, "sprof: finished the unfinished recording in {}\n", flags.dir);
  }
  SPROF_TRY_STATUS(store::write_manifest(flags.dir, manifest));
  if (!global_options().quiet) fmt::print(stderr, "sprof: wrote {} in {}\n", summary.text(), flags.dir);
  return 0;
}

}  // namespace

void add_stats_dirs(CLI::App& app, CommandList& commands) {
  auto flags = std::make_shared<StatsDirsFlags>();
  CLI::App* sub = app.add_subcommand(
      "stats-dirs", "(Re)write a recorded profile's per-interval stats directories from its raw samples");
  sub->add_option("PROFILE_DIR", flags->dir, "Profile directory written by sprof record")->required();
  sub->add_option("--python-timer", flags->python_timer,
                  "Samples python_stats counts: total_time (all), cpu_time (on-CPU), off_cpu_time (idle)")
      ->check(CLI::IsMember({"total_time", "cpu_time", "off_cpu_time"}))
      ->capture_default_str();
  add_window_flags(sub, flags->window);
  sub->add_flag("--every-interval", flags->every_interval,
                "A directory for every interval, whatever profiling window record used");
  sub->add_flag("--empty-dirs", flags->empty_dirs,
                "Write directories for intervals without a sample even when there are more than 10000 of them");
  commands.push_back(Command{sub, [flags] { return run_stats_dirs(*flags); }});
}

}  // namespace sprof::cli
