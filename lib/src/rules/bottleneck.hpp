#pragma once
// CPUBottleneck and IOBottleneck share one algorithm (smdebug's two files are the same code with a
// different dimension): count sampling snapshots in which some GPU is below gpu_threshold while some
// core is above the other threshold (CPUUtilization, or I/OWaitPercentage).

#include <map>
#include <string>
#include <unordered_map>

#include "rules/breakdown.hpp"
#include "rules/rule.hpp"

namespace sprof::rules {

struct BottleneckSpec {
  std::string rule;             // "CPUBottleneck"
  std::string dimension;        // "CPUUtilization" or "I/OWaitPercentage"
  std::string threshold_param;  // "cpu_threshold" or "io_threshold"
  std::string what;             // "CPU" / "I/O wait" (evidence wording)
};

class BottleneckRule : public Rule {
 public:
  BottleneckRule(BottleneckSpec spec, const Params& params, const RuleContext& context);
  void on_window(const Window& window) override;
  std::string rule_parameters() const override;
  std::string evidence() const override;

 private:
  void write_bottlenecks();

  BottleneckSpec spec_;
  Params params_;
  bool compat_;
  double threshold_, gpu_threshold_, other_threshold_;
  int64_t patience_;
  // Snapshots: records of one node within 20 ms of the snapshot's first record (smdebug's
  // snapshot_window_seconds). sprof keys snapshots by node so nodes are never merged.
  std::unordered_map<std::string, double> snapshot_;
  int64_t low_gpu_ = 0;
  struct Counts {
    int64_t gpus = 0;
    int64_t cores = 0;
  };
  OrderedMap<std::string, Counts> bottlenecks_;  // "<node>\n<ts>" -> counts
  FrameworkBreakdown breakdown_;
};

}  // namespace sprof::rules
