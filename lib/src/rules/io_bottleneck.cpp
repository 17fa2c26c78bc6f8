// IOBottleneck (smdebug/profiler/analysis/rules/io_bottleneck.py): GPUs idle while cores wait on
// I/O.

#include "rules/bottleneck.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {

RuleDef io_bottleneck_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "IOBottleneck",
      "GPU utilization is low while I/O wait is high, in more than `threshold` percent of the sampling snapshots.",
      "Training waits on storage: prefetch data, read fewer larger files or a binary record format, or use faster "
      "storage.",
      {{"threshold", ParamKind::percent, "50", "percent of snapshots that must be bottlenecks"},
       {"gpu_threshold", ParamKind::percent, "10", "a GPU below this utilization (%) is idle"},
       {"io_threshold", ParamKind::percent, "50", "a core above this I/O wait (%) is waiting"},
       {"patience", ParamKind::count, "1000", "snapshots to collect before the first check"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<BottleneckRule>(
        BottleneckSpec{"IOBottleneck", "I/OWaitPercentage", "io_threshold", "I/O wait"}, params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (input.system.empty()) return "no system metrics";
    if (!has_dimension(input, "GPUUtilization")) return "no GPU metrics (CPU-only job)";
    if (!has_dimension(input, "I/OWaitPercentage")) return "no I/O wait metrics";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
