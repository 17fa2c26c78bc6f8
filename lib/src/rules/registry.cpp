// The one list of built-in rules, in the order ProfilerReport runs them: smdebug's, then sprof's own.

#include "rules/registry.hpp"

namespace sprof::rules {

const std::vector<RuleDef>& rule_definitions() {
  static const std::vector<RuleDef> rules = {
      cpu_bottleneck_rule(),      io_bottleneck_rule(),          low_gpu_utilization_rule(),
      step_outlier_rule(),        gpu_memory_increase_rule(),    batch_size_rule(),
      max_initialization_time_rule(), load_balancing_rule(),     overall_system_usage_rule(),
      dataloader_rule(),          overall_framework_metrics_rule(),
      input_bound_rule(),  // sprof's own from here
  };
  return rules;
}

const std::vector<RuleInfo>& rule_catalog() {
  static const std::vector<RuleInfo> catalog = [] {
    std::vector<RuleInfo> infos{profiler_report_info()};
    for (const auto& def : rule_definitions()) infos.push_back(def.info);
    return infos;
  }();
  return catalog;
}

}  // namespace sprof::rules
