// The answers of the stats queries (fetch-*, between-modes, pre-step-zero, post-hook-close,
// by-phase) as JSON, CSV and text.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sprof/stats_render.hpp"
#include "sprof/text_table.hpp"

namespace sprof::render {

void append_list_stats_json(Json& into, const std::string& dir, const store::ProfileIndex& index,
                            const std::vector<const store::StatsRecord*>& rows) {
  into["profile_dir"] = dir;
  into["layout_level"] = store::to_string(index.level);
  into["stats"] = records_json(rows);
  into["warnings"] = problems_json(index.problems);
}

std::string records_csv(const std::vector<const store::StatsRecord*>& rows) {
  std::string text = csv_line(record_csv_header());
  for (const auto* r : rows) text += csv_line(record_csv_fields(*r));
  return text;
}

void append_source_json(Json& into, const query::StatsSource& source) {
  into["source"] = std::string(query::to_string(source.kind()));
  if (auto timer = source.timer()) into["python_timer"] = std::string(intervals::to_string(*timer));
}

void append_selection_json(Json& into, const std::string& dir, const query::StatsSource& source,
                           const query::StatsSelection& selection, const query::SelectedStats& selected,
                           const FunctionOrder& order) {
  into["profile_dir"] = dir;
  into["node_id"] = selected.node.node_id;
  into["query"] = selection.request;
  append_source_json(into, source);
  into["warnings"] = problems_json(source.index().problems);
  append_aggregate_json(into, selected.aggregate, order);
}

std::string selection_text(const query::StatsSource& source, const query::StatsSelection& selection,
                           const query::SelectedStats& selected, const FunctionOrder& order) {
  const query::Aggregate& aggregate = selected.aggregate;
  std::string text = fmt::format(
      "Node {}: {} of {} {} match {}{}\n", selected.node.node_id, aggregate.used.size(), selected.node.records.size(),
      source.what(), selection.description,
      source.timer() ? fmt::format(" (from the raw samples, {})", intervals::to_string(*source.timer())) : "");
  if (!aggregate.used.empty()) {
    text += aggregate_time_note(aggregate);
    text += "\n" + aggregate_table(aggregate, order);
  }
  return text;
}

void append_phases_json(Json& into, const PhasesAnswer& answer, const query::StatsSource& source,
                        const FunctionOrder& order) {
  into["profile_dir"] = answer.dir;
  into["node_id"] = answer.node_id;
  into["query"]["group_by"] = answer.training ? "training_phase" : "job_phase";
  if (!answer.training) into["query"]["compat"] = answer.compat;
  append_source_json(into, source);
  into["warnings"] = problems_json(source.index().problems);
  Json phases = Json::array();
  for (const query::PhaseAggregate& r : *answer.phases) {
    Json j;
    j["name"] = r.name;
    if (r.training != nullptr) {
      j["start_mode"] = sprof::to_string(r.training->start_mode);
      j["end_mode"] = sprof::to_string(r.training->end_mode);
    }
    j["parts"] = r.parts;
    append_aggregate_json(j, r.aggregate, order);
    phases.push_back(std::move(j));
  }
  into["phases"] = std::move(phases);
}

std::string phases_csv(const PhasesAnswer& answer, const FunctionOrder& order) {
  const auto& phases = *answer.phases;
  if (phases.empty()) return csv_line({"phase"});
  std::string text;
  for (size_t i = 0; i < phases.size(); ++i) {
    text += aggregate_csv(phases[i].aggregate, order, {"phase"}, {phases[i].name}, i == 0);
  }
  return text;
}

std::string phases_text(const PhasesAnswer& answer, const query::StatsSource& source, const FunctionOrder& order) {
  std::string text = fmt::format("Node {}: {} {}\n", answer.node_id, answer.phases->size(),
                                 answer.training ? "training phases" : "job phases");
  for (const query::PhaseAggregate& r : *answer.phases) {
    text += fmt::format("\n=== {}", r.name);
    if (!answer.training) {
      text += fmt::format(" ({})", r.parts.empty() ? "no stats" : fmt::format("{}", fmt::join(r.parts, ", ")));
    }
    text += fmt::format(": {} {}\n", r.aggregate.used.size(), source.sampled() ? "intervals" : "stats files");
    if (!r.aggregate.used.empty()) {
      text += aggregate_time_note(r.aggregate);
      text += "\n" + aggregate_table(r.aggregate, order);
    }
  }
  return text;
}

}  // namespace sprof::render
