#pragma once
// What a stats query reads, chosen in one place: the stats files of a directory (smdebug's way),
// or, for a sprof profile root (sprof.json + samples/), one record per interval of its step
// timeline, aggregated from the raw samples, so that every step can be answered whatever stats
// directories exist. Queries see only this interface, so another source (a remote profile) can
// stand under them.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/interval_stats.hpp"
#include "sprof/profile.hpp"
#include "sprof/query.hpp"
#include "sprof/result.hpp"
#include "sprof/sampled_profile.hpp"

namespace sprof::query {

enum class SourceKind { stats, samples };
std::string_view to_string(SourceKind kind);  // "stats" | "samples"
std::optional<SourceKind> parse_source_kind(std::string_view text);

struct SourceOptions {
  // Unset: samples for a sprof profile root, stats files otherwise.
  std::optional<SourceKind> kind;
  // Samples only (a usage error for stats files); unset: the timer record wrote the stats with.
  std::optional<PythonTimer> timer;
  bool strict = false;  // malformed, misplaced or unreadable entries are errors, not skipped
  // Samples only: keep these threads' samples (threading name or kernel TID); empty keeps all.
  std::vector<std::string> threads;
};

class StatsSource {
 public:
  virtual ~StatsSource() = default;
  virtual SourceKind kind() const = 0;
  // The records a query selects from (smdebug's list_profile_stats for stats files).
  virtual const store::ProfileIndex& index() const = 0;
  // What a record is, for messages: "cProfile stats files" | "intervals".
  virtual std::string_view what() const = 0;
  // Adds the selected records (pointers into index()) in selection order. Unreadable stats
  // files are warned about and skipped (errors when strict); a selection none of whose files
  // can be read is an error.
  virtual Result<Aggregate> aggregate(const Selection& selection) const = 0;
  // aggregate() of each selection, in order; stats files are read in one pass.
  virtual Result<std::vector<Aggregate>> aggregate_each(const std::vector<Selection>& selections) const;
  // The raw samples and the timer that picks them (samples sources only).
  virtual const SampledProfile* sampled() const { return nullptr; }
  virtual std::optional<PythonTimer> timer() const { return std::nullopt; }
};

// Errors: usage (--source samples on a directory without raw samples, a timer or threads for
// stats files, a thread no process of the profile has),
// bad_input (no samples to answer from, unreadable profile), and what discovery reports.
Result<std::unique_ptr<StatsSource>> open_stats_source(const store::ProfilePath& dir,
                                                       const SourceOptions& options);

// The stats files under dir, with every skipped entry logged as a warning (an error when strict).
Result<store::ProfileIndex> load_stats_index(const store::ProfilePath& dir, bool strict);

// smdebug's fetch_profile_stats_by_training_phase and _by_job_phase over a source: one aggregate
// per training phase (a (start mode, end mode) pair) or per job phase (the pairs it holds, each
// aggregated, then added in order, as smdebug adds Stats objects).
enum class PhaseGrouping { training_phase, job_phase };

struct PhaseAggregate {
  std::string name;                          // "train-eval", "training_loop", ...
  std::vector<std::string> parts;            // the training phases it is made of
  const TrainingPhase* training = nullptr;   // a training phase: that phase (in `phases`)
  Aggregate aggregate;
};

// `wanted` keeps only the phases so named (all when empty). `phases` must outlive the result.
Result<std::vector<PhaseAggregate>> aggregate_phases(const StatsSource& source,
                                                     const std::vector<TrainingPhase>& phases,
                                                     PhaseGrouping grouping, Compat compat,
                                                     const std::vector<std::string>& wanted);

// by-phase's question: `node`'s records (cprofile_records_of_node) in training phases, aggregated
// by `grouping`. `wanted` that names no phase there is a usage error naming `profile` and the node.
struct NodePhases {
  std::string node_id;
  std::vector<TrainingPhase> training;  // what `phases` point into (a move keeps its elements)
  std::vector<PhaseAggregate> phases;
};
Result<NodePhases> aggregate_node_phases(const StatsSource& source, std::string_view node,
                                         PhaseGrouping grouping, Compat compat,
                                         const std::vector<std::string>& wanted,
                                         std::string_view profile);

}  // namespace sprof::query
