#pragma once
// How sprof diff's text and HTML pages spell durations, changes and intervals.

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sprof/profile_diff.hpp"

namespace sprof::render {

// A duration with a unit that suits it ("52.3 ms", "1.20 s", "85 µs").
inline std::string seconds_text(double s) {
  double a = std::abs(s);
  if (a >= 1) return fmt::format("{:.3f} s", s);
  if (a >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.0f} µs", s * 1e6);
}
inline std::string signed_seconds(double s) { return (s > 0 ? "+" : s < 0 ? "" : "±") + seconds_text(s); }
inline std::string interval_text(const report::ConfidenceInterval& ci) {
  if (std::isinf(ci.lo) || std::isinf(ci.hi)) return "(too few steps)";
  return fmt::format("[{}, {}]", signed_seconds(ci.lo), signed_seconds(ci.hi));
}
inline std::string pct_text(double pct) { return fmt::format("{:+.1f} %", pct); }

// What an interval says of a change: it grew (lies above zero), shrank (below), or cannot tell.
enum class Trend { none, grew, shrank };
inline Trend trend_of(const report::ConfidenceInterval& ci) {
  return ci.lo > 0 ? Trend::grew : ci.hi < 0 ? Trend::shrank : Trend::none;
}

// The diff's tables as cells, drawn by the text page (colours) and the HTML page (classes) alike.
struct DiffCell {
  std::string text;
  Trend trend = Trend::none;
};
struct DiffTable {
  std::vector<std::string> headers;
  std::vector<std::vector<DiffCell>> rows;
  size_t more = 0;  // rows left out after the first `top`
};
// Step, iteration and input-wait medians.
DiffTable step_table(const report::ProfileDiff& diff);
// The `top` functions with the largest change of self time per step, or of total time (with what
// they called: a function that slowed in a shared helper shows there).
DiffTable function_table(const report::ProfileDiff& diff, bool total, size_t top);
// The `top` kernels with the largest change of time per step.
DiffTable kernel_table(const report::GpuDiff& gpu, size_t top);

// A side as the pages name it: its path, steps and what was left out.
inline std::string side_text(const report::DiffSide& s) {
  if (s.trace_file) {
    return fmt::format("{} (Chrome trace, {})", s.path, s.steps == 1 ? std::string("one step or none: its totals")
                                                                      : fmt::format("{} steps", s.steps));
  }
  std::string text = s.steps == 1 ? fmt::format("{} (1 step, {}", s.path, s.first_step)
                                   : fmt::format("{} ({} steps, {}-{}", s.path, s.steps, s.first_step, s.last_step);
  if (s.partial_steps > 0) text += fmt::format("; {} partial left out", s.partial_steps);
  return text + ")";
}

}  // namespace sprof::render
