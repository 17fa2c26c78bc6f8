#pragma once
// One factory per rule file; registry.cpp lists them in ProfilerReport's order.

#include "rules/rule.hpp"

namespace sprof::rules {

RuleDef cpu_bottleneck_rule();
RuleDef io_bottleneck_rule();
RuleDef low_gpu_utilization_rule();
RuleDef step_outlier_rule();
RuleDef gpu_memory_increase_rule();
RuleDef batch_size_rule();
RuleDef max_initialization_time_rule();
RuleDef load_balancing_rule();
RuleDef overall_system_usage_rule();
RuleDef dataloader_rule();
RuleDef overall_framework_metrics_rule();
RuleDef input_bound_rule();

// ProfilerReport (profiler_report.cpp): its catalog entry and how it sums up its sub-rules.
RuleInfo profiler_report_info();
RuleResult summarize_profiler_report(const std::vector<RuleResult>& sub_rules);

}  // namespace sprof::rules
