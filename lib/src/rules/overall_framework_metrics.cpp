// OverallFrameworkMetrics (smdebug/profiler/analysis/rules/overall_framework_metrics.py): where
// framework time goes: CPU/GPU operators, step phases and the time between steps, forward/backward,
// dataloading and other lanes, Horovod. Never fires.
//
// smdebug's "others" (time in the training loop outside steps) subtracts a running sum that includes
// its own previous value; sprof uses the loop span (first step start to last step end) minus the union
// of step intervals. --compat smdebug keeps the original formula.

#include <fmt/format.h>

#include "rules/breakdown.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

class OverallFrameworkMetrics : public Rule {
 public:
  OverallFrameworkMetrics(const Params& params, const RuleContext& context)
      : params_(params), compat_(context.compat), breakdown_({/*others=*/true, context.compat}) {}

  void on_window(const Window& window) override {
    for (const store::TraceEvent* e : window.framework) breakdown_.add(*e);
    datapoints_ += static_cast<int64_t>(window.framework.size());
  }

  void finish() override {
    breakdown_.finish();
    // This rule lists GPU lanes first and pairs each with its own total, compat or not.
    breakdown_.write(details_, compat_, FrameworkBreakdown::RatioOrder::gpu_first);
  }

  std::string rule_parameters() const override { return ""; }

  std::string evidence() const override {
    if (!details_.contains("phase") || details_["phase"].empty()) {
      return fmt::format("{} framework event(s), no step phases", datapoints_);
    }
    std::string text;
    for (const auto& [lane, percent] : details_["phase"].items()) {
      if (!text.empty()) text += ", ";
      text += fmt::format("{} {:.1f}%", lane, percent.get<double>());
    }
    return "time in the training loop: " + text;
  }

 private:
  Params params_;
  bool compat_;
  FrameworkBreakdown breakdown_;
};

}  // namespace

RuleDef overall_framework_metrics_rule() {
  RuleDef def;
  def.info = RuleInfo{"OverallFrameworkMetrics",
                      "Summarizes where framework time goes: step phases and the time between steps, CPU and GPU "
                      "operators, forward and backward passes, dataloading (never fires).",
                      "Look at the largest shares first; time outside steps points at data loading or evaluation.",
                      {{"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
                      false};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<OverallFrameworkMetrics>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (input.framework.empty()) return "no framework events";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
