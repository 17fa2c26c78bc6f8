#pragma once
// The steps or times of a run that a command looks at (--mode, --start-step, --end-step;
// --start-time, --end-time), parsed from their text and turned into sample windows. Errors are
// usage errors that name the flag.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sprof/modes.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/result.hpp"
#include "sprof/sample_filter.hpp"

namespace sprof::query {

// A step: an integer, or `*` (-1 as a start step, +inf as an end step, as smdebug reads them).
Result<double> parse_step_arg(const std::string& flag, const std::string& text, bool is_end);

// A time since the epoch: microseconds (a plain number or with `us`), or with a unit suffix
// `ms` or `s` (`1596585374.96s`). Values in seconds are multiplied by 1e6 as smdebug's
// fetch_profile_stats_by_time does.
Result<double> parse_time_arg(const std::string& flag, const std::string& text);

// The selection flags as given (empty: not given). Steps and times cannot be mixed.
struct RunSelectionText {
  std::string mode, start_step, end_step, start_time, end_time;
  bool steps() const { return !mode.empty() || !start_step.empty() || !end_step.empty(); }
  bool times() const { return !start_time.empty() || !end_time.empty(); }
};
struct StepRange {
  std::optional<Mode> mode;
  std::optional<int64_t> first, last;  // inclusive, as fetch-by-step's; unset: open
};
struct TimeRange {
  std::optional<double> start_us, end_us;  // epoch µs
  // As [begin, end) on a clock that reads epoch ns minus `epoch_offset_ns`; open ends are the
  // clock's extremes.
  std::pair<int64_t, int64_t> clock_window(int64_t epoch_offset_ns) const {
    auto to_ns = [&](double us) { return static_cast<int64_t>(us * 1000.0) - epoch_offset_ns; };
    return {start_us ? to_ns(*start_us) : INT64_MIN, end_us ? to_ns(*end_us) : INT64_MAX};
  }
};
struct RunSelection {
  std::optional<StepRange> steps;
  std::optional<TimeRange> times;
};
Result<RunSelection> parse_run_selection(const RunSelectionText& text);

// The windows of each process's samples that `selection` names; none (all samples) when it names
// neither steps nor times. `dir` names the profile in errors.
Result<std::optional<std::vector<SampleWindow>>> selected_sample_windows(const Profile& profile,
                                                                         const RunSelection& selection,
                                                                         const std::string& dir);

}  // namespace sprof::query
