// sprof stats-dirs: (re)write the per-interval stats directories of a recorded profile from its
// raw samples and step timeline, e.g. with another timer or another profiling window, as record
// does at its end.

#include <fmt/format.h>

#include "command.hpp"
#include "sprof/record_render.hpp"
#include "sprof/interval_stats.hpp"
#include "sprof/recorder.hpp"
#include "window_flags.hpp"

namespace sprof::cli {
namespace {

struct StatsDirsFlags {
  ProfileArgument dir;
  std::string python_timer = "total_time";
  WindowFlags window;
  recorder::StatsDirsPlan plan;  // --every-interval, --empty-dirs
};

Result<int> run_stats_dirs(const StatsDirsFlags& flags) {
  recorder::StatsDirsPlan plan = flags.plan;
  SPROF_TRY(plan.window, window_from_flags(flags.window));
  plan.timer = *intervals::parse_python_timer(flags.python_timer);
  plan.progress = render::stats_directories_progress(progress_shown());
  SPROF_TRY(recorder::StatsDirsAtResult result, recorder::rewrite_stats_directories_at(flags.dir.where, plan, s3_options()));
  if (!global_options().quiet) {
    if (result.rewrite.recovered) fmt::print(stderr, "sprof: finished the unfinished recording in {}\n", flags.dir.text);
    fmt::print(stderr, "sprof: wrote {} in {}\n", result.rewrite.summary.text(), flags.dir.text);
  }
  if (result.put_back) {
    const remote::UploadSummary& up = *result.put_back;
    for (const std::string& f : up.failed) fmt::print(stderr, "sprof: not put back: {}\n", f);
    if (!up.failed.empty()) return make_error(ErrorKind::io, "{}: {} changes not put back (above)", flags.dir.text, up.failed.size());
    if (!global_options().quiet) fmt::print(stderr, "sprof: put back {} changed files in {}\n", up.uploaded, flags.dir.text);
  }
  return 0;
}

}  // namespace

void add_stats_dirs(CLI::App& app, CommandList& commands) {
  auto flags = std::make_shared<StatsDirsFlags>();
  CLI::App* sub = app.add_subcommand(
      "stats-dirs", "(Re)write a recorded profile's per-interval stats directories from its raw samples");
  add_profile_argument(sub, "PROFILE_DIR", flags->dir, "Profile directory written by sprof record")->required();
  sub->add_option("--python-timer", flags->python_timer,
                  "Samples python_stats counts: total_time (all), cpu_time (on-CPU), off_cpu_time (idle)")
      ->check(CLI::IsMember({"total_time", "cpu_time", "off_cpu_time"}))
      ->capture_default_str();
  add_window_flags(sub, flags->window);
  sub->add_flag("--every-interval", flags->plan.every_interval,
                "A directory for every interval, whatever profiling window record used");
  sub->add_flag("--empty-dirs", flags->plan.empty_dirs,
                "Write directories for intervals without a sample even when there are more than 10000 of them");
  commands.push_back(Command{sub, [flags] { return run_stats_dirs(*flags); }});
}

}  // namespace sprof::cli
