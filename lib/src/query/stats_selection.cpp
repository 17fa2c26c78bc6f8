#include "sprof/stats_selection.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sprof/run_selection.hpp"
#include "sprof/stats_dir.hpp"

namespace sprof::query {
namespace {

std::string step_text(double step) {
  if (std::isinf(step)) return "*";
  return fmt::format("{}", static_cast<int64_t>(step));
}

StatsSelection fixed_selection(const char* description, Selection (*select)(const Selection&)) {
  StatsSelection out;
  out.request = nlohmann::ordered_json::object();
  out.description = description;
  out.select = select;
  return out;
}

}  // namespace

Result<StatsSelection> by_step_selection(const std::string& start_step, const std::string& end_step,
                                         const std::string& mode, const std::string& start_phase,
                                         const std::string& end_phase) {
  StepQuery q;
  SPROF_TRY(q.start_step, parse_step_arg("--start-step", start_step, false));
  SPROF_TRY(q.end_step, parse_step_arg("--end-step", end_step.empty() ? start_step : end_step, true));
  q.mode = parse_mode(mode).value_or(Mode::train);
  q.start_phase = parse_phase(start_phase).value_or(Phase::stepstart);
  q.end_phase = parse_phase(end_phase).value_or(Phase::stepend);

  StatsSelection out;
  out.request["start_step"] = static_cast<int64_t>(q.start_step);
  out.request["end_step"] =
      std::isinf(q.end_step) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(static_cast<int64_t>(q.end_step));
  out.request["mode"] = mode;
  out.request["start_phase"] = start_phase;
  out.request["end_phase"] = end_phase;
  out.description = fmt::format("{} steps {} ({}) to {} ({})", mode, step_text(q.start_step), start_phase,
                                step_text(q.end_step), end_phase);
  out.select = [q](const Selection& records) { return select_by_step(records, q); };
  return out;
}

Result<StatsSelection> by_time_selection(const std::string& start_time, const std::string& end_time) {
  SPROF_TRY(double start_us, parse_time_arg("--start-time", start_time));
  double end_us = std::numeric_limits<double>::infinity();
  if (!end_time.empty()) {
    SPROF_TRY(end_us, parse_time_arg("--end-time", end_time));
  }
  if (end_us < start_us) {
    return make_error(ErrorKind::usage, "--end-time {} is before --start-time {}", end_time, start_time);
  }
  StatsSelection out;
  out.request["start_time_since_epoch_in_micros"] = start_us;
  out.request["end_time_since_epoch_in_micros"] =
      std::isinf(end_us) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(end_us);
  out.description = fmt::format("times {} us to {} us (start or end inside)", store::python_float_repr(start_us),
                                store::python_float_repr(end_us));
  out.select = [start_us, end_us](const Selection& records) { return select_by_time(records, start_us, end_us); };
  return out;
}

StatsSelection between_modes_selection(const std::string& start_mode, const std::string& end_mode) {
  Mode start = parse_mode(start_mode).value_or(Mode::train);
  Mode end = parse_mode(end_mode).value_or(Mode::train);
  StatsSelection out;
  out.request["start_mode"] = start_mode;
  out.request["end_mode"] = end_mode;
  out.description = fmt::format("start mode {} and end mode {}", start_mode, end_mode);
  out.select = [start, end](const Selection& records) { return select_between_modes(records, start, end); };
  return out;
}

StatsSelection pre_step_zero_selection() {
  return fixed_selection("start phase start (before step 0)", select_pre_step_zero);
}

StatsSelection post_hook_close_selection() {
  return fixed_selection("end phase end (to the end of the job)", select_post_hook_close);
}

Result<SelectedStats> select_stats(const StatsSource& source, const std::string& node, const StatsSelection& selection,
                                   const std::string& dir) {
  SelectedStats out;
  SPROF_TRY(out.node, cprofile_records_of_node(source.index(), node));
  out.selection = selection.select(out.node.records);
  if (out.selection.empty()) {
    spdlog::warn("no {} of node {} match: {}", source.what(), out.node.node_id, selection.description);
    // Old-format dirs carry no mode: they read as `global`, which the default mode misses.
    bool has_old = false;
    for (const auto* r : out.node.records) has_old |= r->name.format == store::NameFormat::old;
    if (has_old) {
      spdlog::warn("{} holds old-format stats dirs, which sprof reads as mode global (try --mode global)", dir);
    }
  }
  SPROF_TRY(out.aggregate, source.aggregate(out.selection));
  return out;
}

}  // namespace sprof::query
