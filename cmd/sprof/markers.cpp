// sprof markers DIR: per process, the steps, markers and counters it recorded through sprof's
// Python API, aggregated as sprof.dumps() prints them inside the process.

#include <fmt/format.h>

#include "command.hpp"
#include "sprof/marker_stats.hpp"
#include "sprof/marker_stats_render.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::cli {
namespace {

struct MarkersFlags {
  ProfileArgument dir;
  int pid = 0;
  std::string format = "table";
  std::string sort_by = "total";
  bool ascending = false;
};

Result<int> run_markers(const MarkersFlags& f) {
  SPROF_TRY(query::Profile profile, query::Profile::open(f.dir.where));
  SPROF_TRY(auto processes,
            report::profile_marker_stats(profile, f.pid, report::parse_marker_sort(f.sort_by), f.ascending, f.dir.text));
  const bool single = f.pid != 0;
  fmt::print("{}", f.format == "json" ? render::markers_json(processes, single) : render::markers_text(processes, single));
  return 0;
}

}  // namespace

void add_markers(CLI::App& app, CommandList& commands) {
  auto f = std::make_shared<MarkersFlags>();
  CLI::App* sub = app.add_subcommand(
      "markers", "Steps, markers and counters each process recorded through sprof's Python API, aggregated as "
                 "sprof.dumps() prints them (MXNet's profiler.dumps)");
  add_profile_argument(sub, "dir", f->dir, "Profile directory written by sprof record")->required();
  sub->add_option("--pid", f->pid, "Only this process (then exactly the table sprof.dumps() printed)")
      ->check(CLI::PositiveNumber);
  sub->add_option("-f,--format", f->format, "table or json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  sub->add_option("--sort-by", f->sort_by, "total, avg, min, max or count (markers always by count)")
      ->check(CLI::IsMember({"total", "avg", "min", "max", "count"}))
      ->capture_default_str();
  sub->add_flag("--ascending", f->ascending, "Smallest first");
  commands.push_back({sub, [f] { return run_markers(*f); }});
}

}  // namespace sprof::cli
