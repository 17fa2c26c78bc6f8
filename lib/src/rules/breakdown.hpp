#pragma once
// smdebug's aggregate_framework_metrics (rules/utils.py): classifies framework events by lane and
// sums their durations, then writes the breakdown keys (ratio, CPU, CPU_total, GPU, GPU_total, phase,
// phase_time, general, forward_backward, horovod) into a rule's Details. CPUBottleneck, IOBottleneck
// and StepOutlier attach it for the events around their findings.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rules/ordered_map.hpp"
#include "rules/rule.hpp"

namespace sprof::rules {

class FrameworkBreakdown {
 public:
  struct Options {
    // OverallFrameworkMetrics' extra phase "others": time in the training loop outside steps.
    // smdebug subtracts a running sum that includes its own previous value (kept with compat);
    // sprof uses the loop span (first step start to last step end) minus the union of steps.
    bool others = false;
    bool compat = false;
  };
  // The order of the "ratio" lanes: the bottleneck rules list CPU lanes first, and smdebug pairs
  // them with the wrong totals (GPU first) there; OverallFrameworkMetrics lists GPU lanes first
  // and pairs them correctly.
  enum class RatioOrder { cpu_first, gpu_first };

  FrameworkBreakdown() = default;
  explicit FrameworkBreakdown(Options options) : options_(options) {}

  void add(const store::TraceEvent& event);
  // Computes what needs every event (the "others" phase); call once, after the last add.
  void finish();
  // Writes the keys as smdebug does (percentages of each group's total). With cpu_first, the
  // ratio labels are paired correctly unless compat.
  void write(Json& details, bool compat, RatioOrder order = RatioOrder::cpu_first) const;
  bool empty() const { return count_ == 0; }

 private:
  double outside_steps() const;

  Options options_;
  double gpu_lanes_ = 1;  // smdebug's gpu_counts: GPU lanes seen so far
  std::optional<int64_t> loop_start_us_;
  int64_t loop_end_us_ = 0;
  std::vector<std::pair<int64_t, int64_t>> step_intervals_;
  OrderedMap<std::string, OrderedMap<std::string, double>> cpu_, gpu_;  // lane -> operator -> µs
  OrderedMap<std::string, double> step_phases_;
  OrderedMap<std::string, double> forward_, backward_;
  OrderedMap<std::string, double> general_;  // other lanes of smdebug-written files
  OrderedMap<std::string, double> horovod_;
  int64_t count_ = 0;
};

// smdebug's filter_events: operators summed over lanes, as percentages; those above `threshold`
// percent, renormalised to 100, with their total µs.
struct OperatorShare {
  std::string name;
  double percent = 0;
  double total_us = 0;
};
std::vector<OperatorShare> filter_operators(const OrderedMap<std::string, OrderedMap<std::string, double>>& lanes,
                                            double threshold);

// Lower-cased copy (lane names are compared case-insensitively for "cpu"/"gpu").
std::string lower(std::string_view text);

}  // namespace sprof::rules
