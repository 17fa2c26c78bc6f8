// sprof stats-dirs: (re)write the per-interval stats directories of a recorded profile from its
// raw samples and step timeline, e.g. with another timer, as record does at its end.

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "sprof/interval_query.hpp"
#include "sprof/interval_stats.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::cli {
namespace {

struct StatsDirsFlags {
  std::string dir;
  std::string python_timer = "total_time";
};

Result<int> run_stats_dirs(const StatsDirsFlags& flags) {
  if (!intervals::is_sprof_profile(flags.dir)) {
    return make_error(ErrorKind::usage, "{} is not a sprof profile root (it needs sprof.json and samples/)",
                      flags.dir);
  }
  SPROF_TRY(store::ProfileSamples profile, store::load_profile_samples(flags.dir));
  SPROF_TRY(bootstrap::StepTimeline timeline, bootstrap::read_step_timeline(flags.dir));
  intervals::WriteOptions options;
  options.timer = *intervals::parse_python_timer(flags.python_timer);
  SPROF_TRY(intervals::WriteSummary summary, intervals::write_interval_stats(profile, timeline, options));

  // Keep sprof.json's account of the stats directories true.
  store::Manifest manifest = std::move(*profile.manifest);
  nlohmann::ordered_json section;
  section["profiler"] = intervals::kSampledProfilerDir;
  section["timer"] = flags.python_timer;
  section["intervals"] = summary.intervals;
  section["directories"] = summary.directories;
  section["excluded"] = summary.excluded;
  section["without_samples"] = summary.without_samples;
  auto& extra = manifest.extra;
  extra.erase(std::remove_if(extra.begin(), extra.end(),
                             [](const auto& e) { return e.first == intervals::kManifestSection; }),
              extra.end());
  extra.emplace_back(intervals::kManifestSection, section.dump());
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
  commands.push_back(Command{sub, [flags] { return run_stats_dirs(*flags); }});
}

}  // namespace sprof::cli
