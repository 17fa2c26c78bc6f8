#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "sprof/manifest.hpp"
#include "sprof/query.hpp"
#include "sprof/trace_events.hpp"

namespace sprof::query {
namespace {

template <class Pred>
Selection filter(const Selection& records, Pred pred) {
  Selection out;
  for (const StatsRecord* record : records) {
    if (pred(record->name)) out.push_back(record);
  }
  return out;
}

}  // namespace

bool in_step_interval(const StatsDirName& name, double start_step, double end_step,
                      Phase start_phase, Phase end_phase) {
  // Transcribed from StepPythonProfileStats.in_step_interval, including its comparisons of an
  // int request with the -1/inf of `*` steps.
  const double self_start = name.start_step_value();
  const double self_end = name.end_step_value();
  if (start_step < self_start && end_step > self_end) return true;
  if (start_step > self_start || end_step < self_end) return false;
  if (start_step == self_start &&
      (start_phase == Phase::stepend || start_phase == Phase::forwardpassend) &&
      name.start.phase != start_phase) {
    return false;
  }
  if (end_step == self_end && end_phase == Phase::stepstart &&
      name.end.phase != end_phase) {
    return false;
  }
  return true;
}

bool in_time_interval(const StatsDirName& name, double start_us, double end_us) {
  return (start_us <= name.start.time_us && name.start.time_us <= end_us) ||
         (start_us <= name.end.time_us && name.end.time_us <= end_us);
}

bool has_start_and_end_mode(const StatsDirName& name, Mode start_mode,
                            Mode end_mode) {
  return name.start.mode == start_mode && name.end.mode == end_mode;
}

bool is_pre_step_zero(const StatsDirName& name) { return name.start.phase == Phase::start; }

bool is_post_hook_close(const StatsDirName& name) { return name.end.phase == Phase::end; }

Result<NodeSelection> cprofile_records_of_node(const store::ProfileIndex& index,
                                               std::string_view node) {
  Selection cprofile;
  for (const StatsRecord& record : index.records) {
    if (record.profiler == store::kCprofileName) cprofile.push_back(&record);
  }
  if (cprofile.empty()) {
    return make_error(ErrorKind::bad_input,
                      "no cProfile stats (python_stats files) under {}; found {} pyinstrument "
                      "stats files, which sprof lists but does not aggregate",
                      index.dir.string(), index.records.size());
  }
  NodeSelection out;
  out.node_id = node == kAnyNode ? cprofile.front()->node_id : std::string(node);
  for (const StatsRecord* record : cprofile) {
    if (record->node_id == out.node_id) out.records.push_back(record);
  }
  if (out.records.empty()) {
    return make_error(ErrorKind::bad_input, "node '{}' has no cProfile stats under {}; nodes: {}",
                      out.node_id, index.dir.string(),
                      fmt::join(store::node_ids(index, store::kCprofileName), ", "));
  }
  return out;
}

Selection select_by_step(const Selection& records, const StepQuery& q) {
  return filter(records, [&](const StatsDirName& name) {
    return in_step_interval(name, q.start_step, q.end_step, q.start_phase, q.end_phase) &&
           has_start_and_end_mode(name, q.mode, q.mode);
  });
}

Selection select_by_time(const Selection& records, double start_us, double end_us) {
  return filter(records,
                [&](const StatsDirName& name) { return in_time_interval(name, start_us, end_us); });
}

Selection select_between_modes(const Selection& records, Mode start_mode,
                               Mode end_mode) {
  return filter(records, [&](const StatsDirName& name) {
    return has_start_and_end_mode(name, start_mode, end_mode);
  });
}

Selection select_pre_step_zero(const Selection& records) {
  return filter(records, [](const StatsDirName& name) { return is_pre_step_zero(name); });
}

Selection select_post_hook_close(const Selection& records) {
  return filter(records, [](const StatsDirName& name) { return is_post_hook_close(name); });
}

std::string TrainingPhase::name() const {
  return fmt::format("{}-{}", sprof::to_string(start_mode), sprof::to_string(end_mode));
}

std::vector<TrainingPhase> training_phases(const Selection& records) {
  std::vector<TrainingPhase> phases;
  for (Mode start : kAllModes) {
    for (Mode end : kAllModes) {
      Selection selected = select_between_modes(records, start, end);
      // smdebug's _aggregate_stats returns None for an empty selection, and None is left out.
      if (!selected.empty()) phases.push_back(TrainingPhase{start, end, std::move(selected)});
    }
  }
  return phases;
}

std::string_view to_string(JobPhase phase) {
  switch (phase) {
    case JobPhase::initialization: return "initialization";
    case JobPhase::training_loop: return "training_loop";
    case JobPhase::finalization: return "finalization";
  }
  return "training_loop";
}

std::vector<JobPhaseGroup> job_phases(const std::vector<TrainingPhase>& phases, Compat compat) {
  JobPhaseGroup init{JobPhase::initialization, {}};
  JobPhaseGroup loop{JobPhase::training_loop, {}};
  JobPhaseGroup final{JobPhase::finalization, {}};
  for (const TrainingPhase& phase : phases) {
    JobPhaseGroup* group = &loop;
    if (phase.start_mode == Mode::prestepzero) {
      group = &init;
    } else if (phase.end_mode == Mode::posthookclose) {
      group = &final;
    }
    if (group != &loop && compat == Compat::smdebug) group->parts.clear();
    group->parts.push_back(phase);
  }
  std::vector<JobPhaseGroup> out;
  if (!init.parts.empty()) out.push_back(std::move(init));
  out.push_back(std::move(loop));
  if (!final.parts.empty()) out.push_back(std::move(final));
  return out;
}

std::vector<NodeSummary> node_summaries(const store::ProfileIndex& index) {
  std::map<std::string, NodeSummary> nodes;  // sorted by node id, like smdebug
  for (const store::StatsRecord& r : index.records) {
    auto [it, inserted] = nodes.try_emplace(r.node_id);
    NodeSummary& s = it->second;
    if (inserted) {
      s.node_id = r.node_id;
      s.first_start_us = r.name.start.time_us;
      s.last_end_us = r.name.end.time_us;
    }
    (r.profiler == store::kCprofileName ? s.cprofile : s.pyinstrument)++;
    s.first_start_us = std::min(s.first_start_us, r.name.start.time_us);
    s.last_end_us = std::max(s.last_end_us, r.name.end.time_us);
  }
  std::map<std::string, std::string> ranks, parents;  // by node id
  if (index.level == store::ProfileLevel::root) {
    store::for_each_manifest(index.dir, [&](const store::Manifest& manifest) {
      std::map<int32_t, std::string> by_pid;
      for (const auto& p : manifest.processes) by_pid[p.pid] = p.node_id;
      for (const auto& p : manifest.processes) {
        if (!p.rank.empty()) ranks[p.node_id] = p.rank;
        if (auto parent = by_pid.find(p.ppid); parent != by_pid.end()) parents[p.node_id] = parent->second;
      }
    }, index.files());
  }
  std::vector<NodeSummary> out;
  out.reserve(nodes.size());
  for (auto& [id, s] : nodes) {
    s.machine = store::split_node_id(id).host;
    if (auto rank = ranks.find(id); rank != ranks.end()) s.rank = rank->second;
    if (auto parent = parents.find(id); parent != parents.end()) s.parent = parent->second;
    out.push_back(std::move(s));
  }
  return out;
}

Result<Selection> listed_records(const store::ProfileIndex& index, const std::string& node, const std::string& profiler,
                                 const std::string& dir) {
  Selection rows;
  for (const store::StatsRecord& r : index.records) {
    if (!node.empty() && r.node_id != node) continue;
    if (!profiler.empty() && r.profiler != profiler) continue;
    rows.push_back(&r);
  }
  if (rows.empty() && !node.empty()) {
    return make_error(ErrorKind::bad_input, "node '{}' has no stats under {}; nodes: {}", node, dir,
                      fmt::join(store::node_ids(index), ", "));
  }
  return rows;
}

}  // namespace sprof::query
