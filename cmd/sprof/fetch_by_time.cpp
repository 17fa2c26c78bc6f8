// sprof fetch-by-time: smdebug's fetch_profile_stats_by_time.

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "command.hpp"
#include "query_args.hpp"
#include "stats_query.hpp"

namespace sprof::cli {
namespace {

struct FetchByTimeOptions {
  QueryOptions query;
  std::string start_time;
  std::string end_time;  // empty: no upper bound
};

Result<int> run_fetch_by_time(const FetchByTimeOptions& options) {
  SPROF_TRY(double start_us, parse_time_arg("--start-time", options.start_time));
  double end_us = std::numeric_limits<double>::infinity();
  if (!options.end_time.empty()) {
    SPROF_TRY(end_us, parse_time_arg("--end-time", options.end_time));
  }
  if (end_us < start_us) {
    return make_error(ErrorKind::usage, "--end-time {} is before --start-time {}",
                      options.end_time, options.start_time);
  }
  SelectionCommand spec;
  spec.command = "fetch-by-time";
  spec.query["start_time_since_epoch_in_micros"] = start_us;
  spec.query["end_time_since_epoch_in_micros"] = std::isinf(end_us) ? Json(nullptr) : Json(end_us);
  spec.description = fmt::format("times {} us to {} us (start or end inside)",
                                 float_text(start_us), float_text(end_us));
  spec.select = [start_us, end_us](const query::Selection& records) {
    return query::select_by_time(records, start_us, end_us);
  };
  return run_selection_command(options.query, spec);
}

}  // namespace

void add_fetch_by_time(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<FetchByTimeOptions>();
  CLI::App* sub = app.add_subcommand(
      "fetch-by-time",
      "Aggregate the cProfile stats whose start or end time lies in a time interval");
  add_query_options(sub, options->query, true);
  sub->add_option("--start-time", options->start_time,
                  "Interval start: microseconds since the epoch, or with a unit (us, ms, s)")
      ->required();
  sub->add_option("--end-time", options->end_time,
                  "Interval end, same units (default: no end)");
  commands.push_back(Command{sub, [options] { return run_fetch_by_time(*options); }});
}

}  // namespace sprof::cli
