#pragma once
// Selecting stats of a profile directory and aggregating them, with the semantics of smdebug's
// cProfileAnalysis (smdebug/profiler/analysis/python_profile_analysis.py and
// StepPythonProfileStats in .../utils/python_profile_analysis_utils.py): the same predicates,
// the same order of records, and pstats.Stats.add applied in the order smdebug applies it, so
// sums of float times come out bit-identical.

#include <string>
#include <string_view>
#include <vector>

#include "sprof/profile.hpp"
#include "sprof/pstats.hpp"
#include "sprof/result.hpp"
#include "sprof/stats_dir.hpp"

namespace sprof::query {

using store::StatsDirName;
using store::StatsRecord;

// smdebug's StepPythonProfileStats predicates. Steps are smdebug's numbers: a start `*` is -1,
// an end `*` is +inf.
bool in_step_interval(const StatsDirName& name, double start_step, double end_step,
                      Phase start_phase, Phase end_phase);
// Overlap as smdebug defines it: the stats' start or end time lies in [start_us, end_us].
bool in_time_interval(const StatsDirName& name, double start_us, double end_us);
bool has_start_and_end_mode(const StatsDirName& name, Mode start_mode,
                            Mode end_mode);
bool is_pre_step_zero(const StatsDirName& name);   // start phase is `start`
bool is_post_hook_close(const StatsDirName& name);  // end phase is `end`

// Records in the order smdebug adds them (pointers into a ProfileIndex, which must outlive it).
using Selection = std::vector<const StatsRecord*>;

inline constexpr std::string_view kAnyNode = "any";

struct NodeSelection {
  std::string node_id;  // resolved: never "any"
  Selection records;    // the node's cProfile records, in index order
};

// cProfileAnalysis keeps only cProfile records, then filters by node; node "any" is the node of
// the earliest of them. Errors (bad_input): no cProfile records, or an unknown node (the message
// lists the known ones).
Result<NodeSelection> cprofile_records_of_node(const store::ProfileIndex& index,
                                               std::string_view node = kAnyNode);

// list-stats: the records of `node` and `profiler` (empty: every one), in index order; a node
// without stats is bad_input naming the known nodes (`dir`: the profile, for the message).
Result<Selection> listed_records(const store::ProfileIndex& index, const std::string& node, const std::string& profiler,
                                 const std::string& dir);

// smdebug's list_available_node_ids, with what each node holds: stats counts per profiler and
// the time they span. Sorted by node id.
struct NodeSummary {
  std::string node_id;
  std::string machine;  // the host in the node id (store::split_node_id)
  std::string parent;   // the node id of the recorded process that started it (a DataLoader worker's
                        // main process), from sprof.json; "" when none
  std::string rank;  // $RANK of the process when its sprof.json says (store::process_ranks)
  size_t cprofile = 0;
  size_t pyinstrument = 0;
  double first_start_us = 0.0;
  double last_end_us = 0.0;
};
std::vector<NodeSummary> node_summaries(const store::ProfileIndex& index);

struct StepQuery {
  double start_step = 0;
  double end_step = 0;  // fetch_profile_stats_by_step: end_step=None means start_step
  Mode mode = Mode::train;
  Phase start_phase = Phase::stepstart;
  Phase end_phase = Phase::stepend;
};

// fetch_profile_stats_by_step: in_step_interval and start and end mode both equal to mode.
Selection select_by_step(const Selection& records, const StepQuery& query);
// fetch_profile_stats_by_time (times already in microseconds).
Selection select_by_time(const Selection& records, double start_us, double end_us);
// fetch_profile_stats_between_modes.
Selection select_between_modes(const Selection& records, Mode start_mode,
                               Mode end_mode);
Selection select_pre_step_zero(const Selection& records);
Selection select_post_hook_close(const Selection& records);

// fetch_profile_stats_by_training_phase: one group per (start_mode, end_mode) pair that has
// records, in smdebug's order (start mode outer, end mode inner, modes in enum order).
struct TrainingPhase {
  Mode start_mode = Mode::train;
  Mode end_mode = Mode::train;
  Selection records;
  std::string name() const;  // "<start_mode>-<end_mode>", e.g. "train-eval"
};
std::vector<TrainingPhase> training_phases(const Selection& records);

// fetch_profile_stats_by_job_phase. A pair starting in prestepzero is initialization, else a
// pair ending in posthookclose is finalization, else it is part of the training loop.
enum class JobPhase { initialization, training_loop, finalization };
std::string_view to_string(JobPhase phase);  // "initialization" | "training_loop" | "finalization"

// smdebug keeps only the last pair of initialization/finalization (each assignment replaces
// the previous one), losing the others; sprof adds them all, in pair order.
enum class Compat { sprof, smdebug };

struct JobPhaseGroup {
  JobPhase phase = JobPhase::training_loop;
  std::vector<TrainingPhase> parts;  // aggregated each, then added in this order
};
// Initialization and finalization appear only when present; training_loop always (smdebug
// always returns it, empty when no pair belongs to it). Order: initialization, training_loop,
// finalization.
std::vector<JobPhaseGroup> job_phases(const std::vector<TrainingPhase>& phases,
                                      Compat compat = Compat::sprof);

// A pstats.Stats built as smdebug builds it: Stats() then add(path) per record.
// The sampled time one thread adds to an aggregate (samples sources).
struct ThreadTime {
  int32_t pid = 0;
  int32_t tid = 0;    // kernel TID, 0 if unknown
  std::string name;   // threading.Thread name, empty if never read
  double seconds = 0;
};

struct Aggregate {
  store::StatsTable table;
  // pstats.Stats' running totals: add() sums the per-file totals (total_tt is a float sum in
  // that order, so it can differ in the last bits from summing the table's tt values).
  int64_t total_calls = 0;
  int64_t primitive_calls = 0;
  double total_tt = 0.0;
  Selection used;                       // records whose files were read and added, in order
  std::vector<store::Problem> unreadable;  // selected files that could not be read (skipped)
  // Wall time: the selected intervals' durations (end - start) summed. total_tt sums every
  // sampled thread's time, so with several threads it exceeds this.
  double wall_seconds = 0;
  // Samples sources: each thread's share of total_tt, largest first (empty for stats files).
  std::vector<ThreadTime> threads;

  // pstats.Stats.add(other Stats); wall time and threads add up too.
  void add(const Aggregate& other);
};

struct AggregateOptions {
  bool strict = false;   // an unreadable file is an error instead of a skipped record
  unsigned threads = 0;  // threads that read and parse files; 0 = one per core (at most 4)
  const store::ProfileFiles* files = nullptr;  // where the records' files are; null: locally
};

// Reads the selected files (in parallel) and adds them in selection order. Unreadable files
// are skipped and listed (or, strict, the first is the error).
Result<Aggregate> aggregate(const Selection& records, const AggregateOptions& options = {});
// aggregate() of each selection, equal to calling it once per selection, but reading all of
// them in one pass: one set of reading threads, warm from one selection to the next, and one key
// pool (by-phase's phases, each a few files, paid a cold start each). The first error ends it.
Result<std::vector<Aggregate>> aggregate_each(const std::vector<Selection>& selections,
                                              const AggregateOptions& options = {});

// The aggregate as a pstats file (-o FILE: python3 -m pstats FILE reads it). Nothing selected is
// bad input naming `path`: pstats cannot load an empty stats file.
Status write_aggregate_pstats(const std::filesystem::path& path, const Aggregate& aggregate);

// A stats record's duration in seconds (end - start of its name).
double record_seconds(const StatsRecord& record);

}  // namespace sprof::query
