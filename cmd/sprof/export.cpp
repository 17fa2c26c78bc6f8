// sprof export: a profile directory's raw samples as collapsed stacks, speedscope JSON or a flame
// graph SVG, or the whole profile (samples, steps, GPU activity) as one Chrome trace.

#include <optional>

#include <fmt/format.h>

#include "command.hpp"
#include "query_args.hpp"
#include "sprof/file_bytes.hpp"
#include "sprof/gzip.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/profile_export.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/profile_tables.hpp"
#include "sprof/s3.hpp"
#include "sprof/sample_report.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::cli {
namespace {

struct ExportFlags {
  ProfileArgument dir;
  std::string format;
  std::string output = "-";
  int pid = 0;
  TimeViewFlags time;
  bool gil = false;
  bool gzip = false;
  std::string title;
  query::RunSelectionText run;
  std::string job;  // -f tables
};

// -f tables: the whole profile as tables for SQL engines, into a directory or s3://bucket/prefix.
Result<int> export_tables(const ExportFlags& f) {
  if (f.output == "-") return make_error(ErrorKind::usage, "-f tables: give -o DIR or -o s3://bucket/prefix for the tables");
  if (f.pid != 0 || f.gil || f.time.given() || f.run.steps() || f.run.times()) {
    return make_error(ErrorKind::usage, "-f tables exports the whole profile: --pid, --gil, --on-cpu, --all-threads and the "
                      "step and time flags do not apply (select in SQL)");
  }
  report::TablesOptions options;
  options.job = f.job;
  SPROF_TRY(report::TablesWritten written, report::write_profile_tables_at(f.dir.where, f.output, options, s3_options()));
  if (!global_options().quiet) {
    fmt::print(stderr, "sprof: wrote job {} to {}: {} files, {} rows\n", written.job, f.output, written.files.size(),
               written.rows());
  }
  return 0;
}

}  // namespace

void add_export(CLI::App& app, CommandList& commands) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* sub = app.add_subcommand(
      "export",
      "Write a profile's samples as collapsed stacks, speedscope JSON or a flame graph SVG, or the profile as a Chrome "
      "trace");
  add_profile_argument(sub, "dir", flags->dir, "Profile directory written by sprof record")->required();
  sub->add_option("-f,--format", flags->format,
                  "collapsed (alias raw: flamegraph.pl's folded stacks), speedscope, flamegraph (an "
                  "interactive SVG: hover, click to zoom, search), or chrome (a Chrome trace in kineto's "
                  "conventions: Python stacks, steps, GPU work); inferred from -o's name (.folded/.collapsed/"
                  ".txt, .speedscope.json, .svg, .json/.json.gz); or tables (the whole profile as Hive-partitioned JSON "
                  "Lines for SQL engines into -o DIR or s3://bucket/prefix; docs/tables.md)")
      ->check(CLI::IsMember({"collapsed", "raw", "speedscope", "flamegraph", "chrome", "tables"}));
  sub->add_option("-o,--output", flags->output, "Output file (default: standard output)");
  sub->add_option("--pid", flags->pid, "Only this process")->check(CLI::PositiveNumber);
  add_time_view_flags(sub, flags->time, "Samples");
  sub->add_flag("--gil", flags->gil, "Only samples of threads holding the GIL");
  add_run_selection_options(sub, flags->run, "samples");
  sub->add_option("--title", flags->title, "Flame graph title (default: the directory and the filter)");
  sub->add_flag("--gzip", flags->gzip, "Compress the output with gzip (implied by an -o name ending .gz)");
  sub->add_option("--job", flags->job,
                  "-f tables: the job's name in the tables (default: the directory's name and its start time, UTC)");

  commands.push_back({sub, [flags]() -> Result<int> {
    SPROF_TRY(std::string format, report::export_format(flags->format, flags->output));
    if (format == "tables") return export_tables(*flags);
    SPROF_TRY(query::Profile profile, query::Profile::open(flags->dir.where));
    report::ExportRequest request;
    request.format = format;
    request.view = flags->time.view();
    request.gil_only = flags->gil;
    request.pid = flags->pid;
    request.title = flags->title;
    SPROF_TRY(query::RunSelection run, query::parse_run_selection(flags->run));
    SPROF_TRY(request.windows, query::selected_sample_windows(profile, run, flags->dir.text));
    SPROF_TRY(report::ExportedProfile exported, report::export_profile(profile, request));
    std::string& text = exported.text;
    if (flags->gzip || flags->output.ends_with(".gz")) text = store::gzip(text);
    if (flags->output == "-") {
      fmt::print("{}", text);
      std::fflush(stdout);
      return 0;
    }
    // A temporary file renamed over the old one: a full disk or a kill leaves the old one whole.
    SPROF_TRY_STATUS(store::write_file_atomically(flags->output, text));
    if (!global_options().quiet) fmt::print(stderr, "sprof: wrote {} ({})\n", flags->output, exported.what);
    return 0;
  }});
}

}  // namespace sprof::cli
