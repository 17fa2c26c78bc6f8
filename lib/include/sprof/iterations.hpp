#pragma once
// Training-loop iterations: each step with the wait before it. ML engineers count an iteration from
// one step's end to the next's (torch.profiler's ProfilerStep#N, Lightning, TensorBoard's
// input-pipeline analysis); smdebug's step event spans only the step's own work, so the time
// between steps, mostly waiting for the next batch, lies in no step. Read from the framework
// timeline (Step:ModeKeys.* events and the DataLoader lanes), so smdebug's own profiles work too.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/trace_events.hpp"

namespace sprof::rules {

struct StepSpan {
  std::string node;  // normalised node id
  std::string mode;  // "TRAIN", "EVAL", ... (the part after Step:ModeKeys.)
  std::string step;  // step_num as written
  int64_t pid = 0;
  int64_t start_us = 0;
  int64_t end_us = 0;
};

// Step:ModeKeys.* events as spans, in start order.
std::vector<StepSpan> step_spans(const std::vector<store::TraceEvent>& framework);

struct Iteration {
  StepSpan step;
  bool measured = false;       // the wait before the step could be measured
  int64_t wait_start_us = 0;   // the wait is wait_start_us..step.start_us
  int64_t dataloader_us = 0;   // of the wait, the time inside the process's DataLoader events
  double wait_s() const { return static_cast<double>(step.start_us - wait_start_us) / 1e6; }
  double step_s() const { return static_cast<double>(step.end_us - step.start_us) / 1e6; }
  double iteration_s() const { return wait_s() + step_s(); }
};

// One iteration per step. Per process (node and pid), in start order, a step's wait runs from the
// end of the previous step (of any mode) to its start. A process's first step waits from the start
// of the first DataLoader event of the process that began before it (the iterator's creation or a
// fetch: the loop's first batch), and is not measured when there is none. The DataLoader events are
// the lanes DataLoaderIterInitialize, DataLoaderIter (fetches) and TensorFlow's DataIterator.
std::vector<Iteration> iterations(const std::vector<StepSpan>& steps, const std::vector<store::TraceEvent>& framework);

struct Spread {
  double mean = 0, p50 = 0, p95 = 0, max = 0;  // seconds; numpy's linear percentiles
};

// The measured iterations of one mode, over every process.
struct IterationStats {
  std::string mode;
  size_t iterations = 0;
  size_t processes = 0;
  Spread iteration, step, wait;
  double iteration_s = 0, step_s = 0, wait_s = 0, dataloader_s = 0;  // sums
  double wait_share() const { return iteration_s > 0 ? wait_s / iteration_s : 0; }
  double dataloader_share() const { return iteration_s > 0 ? dataloader_s / iteration_s : 0; }
  double step_share() const { return iteration_s > 0 ? step_s / iteration_s : 0; }
};

// Per mode with measured iterations: TRAIN first, then by number of iterations.
std::vector<IterationStats> iteration_stats(const std::vector<Iteration>& iterations);

// The training loop the headline and the input-bound checks speak of: TRAIN's iterations, else
// the mode with the most; none without measured iterations.
std::optional<IterationStats> training_loop(const std::vector<Iteration>& iterations);
// The same from a framework timeline: its steps and their iterations.
std::optional<IterationStats> training_loop(const std::vector<store::TraceEvent>& framework);

// TensorBoard's input-pipeline analysis: a loop waiting for input in at least 20 % of its time is
// highly input-bound, in at least 5 % moderately (kHighlyInfeedBoundThresholdInPercent and
// kModeratelyInfeedBoundThresholdInPercent).
inline constexpr double kHighlyInputBoundShare = 0.20;
inline constexpr double kModeratelyInputBoundShare = 0.05;
const char* input_bound_class(double wait_share);  // "highly input-bound", "moderately input-bound", "not input-bound"

// "training loop (TRAIN, 29 iterations): 92.4% waiting for input (DataLoader 90.1%), 7.6% in steps:
// highly input-bound"; `waiting_in` names what the step threads did while waiting when no
// DataLoader was seen ("" to leave it out).
std::string loop_headline(const IterationStats& loop, std::string_view waiting_in = {});

}  // namespace sprof::rules
