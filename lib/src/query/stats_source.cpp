#include "sprof/stats_source.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <spdlog/spdlog.h>

#include "sprof/layout.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::query {

namespace fs = std::filesystem;

std::string_view to_string(SourceKind kind) { return kind == SourceKind::samples ? "samples" : "stats"; }

std::optional<SourceKind> parse_source_kind(std::string_view text) {
  if (text == "samples") return SourceKind::samples;
  if (text == "stats") return SourceKind::stats;
  return std::nullopt;
}

Result<store::ProfileIndex> load_stats_index(const store::ProfilePath& dir, bool strict) {
  store::DiscoverOptions discover;
  discover.strict = strict;
  SPROF_TRY(store::ProfileIndex index, store::discover_profile(dir.path, discover, dir.source));
  for (const store::Problem& problem : index.problems) spdlog::warn("{} (skipped)", problem.message);
  spdlog::debug("{}: read as a {}; {} stats files", dir.path.string(), store::to_string(index.level),
                index.records.size());
  return index;
}

namespace {

class StatsFilesSource final : public StatsSource {
 public:
  StatsFilesSource(store::ProfileIndex index, bool strict) : index_(std::move(index)), strict_(strict) {}
  SourceKind kind() const override { return SourceKind::stats; }
  const store::ProfileIndex& index() const override { return index_; }
  std::string_view what() const override { return "cProfile stats files"; }

  Result<Aggregate> aggregate(const Selection& selection) const override {
    SPROF_TRY(Aggregate aggregate, query::aggregate(selection, options()));
    SPROF_TRY_STATUS(report_unreadable(selection, aggregate));
    return aggregate;
  }

  Result<std::vector<Aggregate>> aggregate_each(const std::vector<Selection>& selections) const override {
    SPROF_TRY(std::vector<Aggregate> aggregates, query::aggregate_each(selections, options()));
    for (size_t i = 0; i < selections.size(); ++i) SPROF_TRY_STATUS(report_unreadable(selections[i], aggregates[i]));
    return aggregates;
  }

 private:
  AggregateOptions options() const {
    AggregateOptions options;
    options.strict = strict_;
    options.files = &index_.files();
    return options;
  }

  // Skipped files are warned about; a selection none of whose files could be read is an error.
  static Status report_unreadable(const Selection& selection, const Aggregate& aggregate) {
    for (const store::Problem& p : aggregate.unreadable) spdlog::warn("{} (skipped)", p.message);
    if (!selection.empty() && aggregate.used.empty()) {
      return make_error(ErrorKind::bad_input, "none of the {} selected stats files could be read; first: {}",
                        selection.size(), aggregate.unreadable.front().message);
    }
    return {};
  }

  store::ProfileIndex index_;
  bool strict_ = false;
};

class SamplesSource final : public StatsSource {
 public:
  SamplesSource(SampledProfile profile, PythonTimer timer, std::vector<std::string> threads)
      : profile_(std::move(profile)), timer_(timer), threads_(std::move(threads)) {}
  SourceKind kind() const override { return SourceKind::samples; }
  const store::ProfileIndex& index() const override { return profile_.index; }
  std::string_view what() const override { return "intervals"; }
  Result<Aggregate> aggregate(const Selection& selection) const override {
    return aggregate_samples(profile_, selection, timer_, threads_);
  }
  const SampledProfile* sampled() const override { return &profile_; }
  std::optional<PythonTimer> timer() const override { return timer_; }

 private:
  SampledProfile profile_;
  PythonTimer timer_;
  std::vector<std::string> threads_;
};

// Each of `words` must name a thread of some sampled process: a typo would answer "nothing".
Status check_threads(const SampledProfile& profile, const std::vector<std::string>& words) {
  std::set<std::string> names;
  for (const std::string& word : words) {
    bool found = false;
    for (const store::ProcessSamples& process : profile.samples.processes) {
      const int32_t pid = log_pid(process.log);
      for (const store::LogThread& thread : process.log.threads()) {
        found = found || thread_selected(thread, pid, {word});
        if (!thread_name(thread, pid).empty()) names.insert(thread_name(thread, pid));
      }
    }
    if (!found) {
      return make_error(ErrorKind::usage, "--thread {}: no sampled thread has that name or TID; threads: {}",
                        word, names.empty() ? std::string("(none named)") : fmt::format("{}", fmt::join(names, ", ")));
    }
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<StatsSource>> open_stats_source(const store::ProfilePath& where, const SourceOptions& options) {
  const fs::path& dir = where.path;
  const bool raw_samples = store::detect(dir, where.files()).raw_samples();
  if (options.kind == SourceKind::samples && !raw_samples) {
    return make_error(ErrorKind::usage,
                      "--source samples: {} is not a sprof profile root (it needs sprof.json and samples/)",
                      dir.string());
  }
  if (raw_samples && options.kind != SourceKind::stats) {
    SPROF_TRY(timeline::StepTimeline timeline, timeline::read_step_timeline(dir, where.files()));
    SPROF_TRY(SampledProfile sampled, load_sampled_profile(where, timeline));
    if (sampled.index.records.empty()) {
      return make_error(ErrorKind::bad_input, "{}: no samples to answer from", dir.string());
    }
    SPROF_TRY_STATUS(check_threads(sampled, options.threads));
    PythonTimer timer = options.timer.value_or(sampled.recorded_timer.value_or(PythonTimer::total_time));
    spdlog::debug("{}: answering from the raw samples: {} intervals, timer {}", dir.string(),
                  sampled.index.records.size(), intervals::to_string(timer));
    return std::unique_ptr<StatsSource>(std::make_unique<SamplesSource>(std::move(sampled), timer, options.threads));
  }
  if (options.timer || !options.threads.empty()) {
    return make_error(ErrorKind::usage,
                      "{} applies to answers from raw samples; {} is answered from its stats files",
                      options.timer ? "--python-timer" : "--thread", dir.string());
  }
  SPROF_TRY(store::ProfileIndex index, load_stats_index(where, options.strict));
  return std::unique_ptr<StatsSource>(std::make_unique<StatsFilesSource>(std::move(index), options.strict));
}

Result<std::vector<Aggregate>> StatsSource::aggregate_each(const std::vector<Selection>& selections) const {
  std::vector<Aggregate> out;
  out.reserve(selections.size());
  for (const Selection& selection : selections) {
    SPROF_TRY(Aggregate aggregate, this->aggregate(selection));
    out.push_back(std::move(aggregate));
  }
  return out;
}

Result<std::vector<PhaseAggregate>> aggregate_phases(const StatsSource& source,
                                                     const std::vector<TrainingPhase>& phases,
                                                     PhaseGrouping grouping, Compat compat,
                                                     const std::vector<std::string>& wanted) {
  auto is_wanted = [&](const std::string& name) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
  };
  // Every phase's records (a job phase's: each part's) are read in one pass, then each phase's
  // aggregate is put together as before: a training phase's is its records', a job phase's adds
  // its parts' in order.
  std::vector<PhaseAggregate> out;
  std::vector<size_t> part_counts;  // per phase in `out`: how many of `selections` it adds
  std::vector<Selection> selections;
  if (grouping == PhaseGrouping::training_phase) {
    for (const TrainingPhase& phase : phases) {
      if (!is_wanted(phase.name())) continue;
      out.push_back(PhaseAggregate{phase.name(), {phase.name()}, &phase, {}});
      selections.push_back(phase.records);
      part_counts.push_back(1);
    }
  } else {
    for (const JobPhaseGroup& group : job_phases(phases, compat)) {
      std::string name(to_string(group.phase));
      if (!is_wanted(name)) continue;
      PhaseAggregate r{name, {}, nullptr, {}};
      for (const TrainingPhase& part : group.parts) {
        r.parts.push_back(part.name());
        selections.push_back(part.records);
      }
      out.push_back(std::move(r));
      part_counts.push_back(group.parts.size());
    }
  }
  SPROF_TRY(std::vector<Aggregate> aggregates, source.aggregate_each(selections));
  size_t next = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (grouping == PhaseGrouping::training_phase) {
      out[i].aggregate = std::move(aggregates[next++]);
      continue;
    }
    for (size_t k = 0; k < part_counts[i]; ++k) out[i].aggregate.add(aggregates[next++]);
  }
  return out;
}

Result<NodePhases> aggregate_node_phases(const StatsSource& source, std::string_view node,
                                         PhaseGrouping grouping, Compat compat,
                                         const std::vector<std::string>& wanted,
                                         std::string_view profile) {
  SPROF_TRY(NodeSelection selected, cprofile_records_of_node(source.index(), node));
  NodePhases out{selected.node_id, training_phases(selected.records), {}};
  SPROF_TRY(out.phases, aggregate_phases(source, out.training, grouping, compat, wanted));
  if (!wanted.empty() && out.phases.empty()) {
    return make_error(ErrorKind::usage, "--phase {}: no such phase in {} (node {})", fmt::join(wanted, ","),
                      profile, out.node_id);
  }
  return out;
}

}  // namespace sprof::query
