// CPUBottleneck (smdebug/profiler/analysis/rules/cpu_bottleneck.py): GPUs idle while CPUs are
// saturated.

#include "rules/bottleneck.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {

RuleDef cpu_bottleneck_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "CPUBottleneck",
      "GPU utilization is low while CPU utilization is high, in more than `threshold` percent of the sampling "
      "snapshots.",
      "The input pipeline is CPU bound: use more data loader workers, prefetch data, or move pre-processing onto "
      "the GPU.",
      {{"threshold", ParamKind::percent, "50", "percent of snapshots that must be bottlenecks"},
       {"gpu_threshold", ParamKind::percent, "10", "a GPU below this utilization (%) is idle"},
       {"cpu_threshold", ParamKind::percent, "90", "a core above this utilization (%) is busy"},
       {"patience", ParamKind::count, "1000", "snapshots to collect before the first check"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<BottleneckRule>(
        BottleneckSpec{"CPUBottleneck", "CPUUtilization", "cpu_threshold", "utilization"}, params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (input.system.empty()) return "no system metrics";
    if (!has_dimension(input, "GPUUtilization")) return "no GPU metrics (CPU-only job)";
    if (!has_dimension(input, "CPUUtilization")) return "no CPU utilization metrics";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
