#pragma once
// smdebug's aggregate_framework_metrics (rules/utils.py): classifies framework events by lane and
// sums their durations, then writes the breakdown keys (ratio, CPU, CPU_total, GPU, GPU_total, phase,
// phase_time, general, forward_backward, horovod) into a rule's Details. CPUBottleneck, IOBottleneck
// and StepOutlier attach it for the events around their findings.

#include <cstdint>
#include <string>

#include "rules/ordered_map.hpp"
#include "rules/rule.hpp"

namespace sprof::rules {

class FrameworkBreakdown {
 public:
  void add(const store::TraceEvent& event);
  // Writes the keys as smdebug does (percentages of each group's total). smdebug pairs the "ratio"
  // labels with the wrong totals (CPU lanes with GPU totals); sprof pairs them correctly unless compat.
  void write(Json& details, bool compat) const;
  bool empty() const { return count_ == 0; }

 private:
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
