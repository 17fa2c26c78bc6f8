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
  std::string dir;
  int pid = 0;
  std::string format = "table";
  std::string sort_by = "total";
  bool ascending = false;
};

report::MarkerSort sort_of(const std::string& name) {
  if (name == "avg") return report::MarkerSort::avg;
  if (name == "min") return report::MarkerSort::min;
  if (name == "max") return report::MarkerSort::max;
  if (name == "count") return report::MarkerSort::count;
  return report::MarkerSort::total;
}

Result<int> run_markers(const MarkersFlags& f) {
  SPROF_TRY(query::Profile profile, query::Profile::open(f.dir));
  SPROF_TRY(const timeline::StepTimeline* timeline, profile.step_timeline());
  std::vector<const timeline::ProcessTimeline*> processes;
  for (const auto& p : timeline->processes) {
    if (f.pid == 0 || p.pid == f.pid) processes.push_back(&p);
  }
  if (f.pid != 0 && processes.empty()) return make_error(ErrorKind::usage, "--pid {}: no markers of that process in {}", f.pid, f.dir);
  if (processes.empty()) return make_error(ErrorKind::bad_input, "{}: no markers (markers/markers.log)", f.dir);
  const bool one = f.pid != 0;
  std::string out = f.format == "json" && !one ? "{\n" : "";
  for (size_t i = 0; i < processes.size(); ++i) {
    const auto stats = report::marker_stats(*processes[i], sort_of(f.sort_by), f.ascending);
    if (f.format == "json") {
      std::string doc = render::marker_stats_json(stats);
      if (one) {
        out += doc;
      } else {
        doc.pop_back();  // its newline: the object goes on inside the outer one
        fmt::format_to(std::back_inserter(out), "\"{}\": {}{}\n", stats.pid, doc, i + 1 < processes.size() ? "," : "");
      }
    } else {
      if (!one) fmt::format_to(std::back_inserter(out), "{}Process {}\n", i > 0 ? "\n" : "", stats.pid);
      out += render::marker_stats_table(stats);
    }
  }
  if (f.format == "json" && !one) out += "}\n";
  fmt::print("{}", out);
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
