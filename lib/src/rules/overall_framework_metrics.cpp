// OverallFrameworkMetrics (smdebug/profiler/analysis/rules/overall_framework_metrics.py): where
// framework time goes: CPU/GPU operators, step phases and the time between steps, forward/backward,
// dataloading and other lanes, Horovod. smdebug's never fires; sprof's fires when the time between
// steps ("others") reaches 20 % of the training loop, TensorBoard's highly input-bound share
// (sprof/iterations.hpp), so that its verdict agrees with the shares it prints (--compat smdebug:
// never).
//
// smdebug's "others" (time in the training loop outside steps) subtracts a running sum that includes
// its own previous value; sprof uses the loop span (first step start to last step end) minus the union
// of step intervals. --compat smdebug keeps the original formula.

#include <fmt/format.h>

#include "rules/breakdown.hpp"
#include "rules/registry.hpp"
#include "sprof/iterations.hpp"

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
    if (compat_ || !details_.contains("phase") || !details_["phase"].contains("others")) return;
    others_percent_ = details_["phase"]["others"].get<double>();
    if (others_percent_ >= 100 * kHighlyInputBoundShare) {
      violations_ = 1;
      triggered_ = 1;
    }
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
    text = "time in the training loop: " + text;
    if (triggered_) {
      text += fmt::format("; {:.1f}% between steps (at least {:.0f}%: see InputBound)", others_percent_,
                          100 * kHighlyInputBoundShare);
    }
    return text;
  }

 private:
  Params params_;
  bool compat_;
  FrameworkBreakdown breakdown_;
  double others_percent_ = 0;
};

}  // namespace

RuleDef overall_framework_metrics_rule() {
  RuleDef def;
  def.info = RuleInfo{"OverallFrameworkMetrics",
                      "Summarizes where framework time goes: step phases and the time between steps, CPU and GPU "
                      "operators, forward and backward passes, dataloading; sprof's fires when 20% of the training "
                      "loop lies between steps (smdebug's never fires).",
                      "Look at the largest shares first; time outside steps points at data loading or evaluation.",
                      {{"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
                      false};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<OverallFrameworkMetrics>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (input.framework().empty()) return "no framework events";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
