// InputBound (sprof's own, not in smdebug): the training loop spends more than `threshold` percent
// of its iterations waiting for input, an iteration being the wait between the previous step's end
// and the step's start plus the step (sprof/iterations.hpp). TensorBoard's input-pipeline analysis
// calls a loop highly input-bound from 20 % of its time waiting for input; that is the default.
// smdebug's step events leave the wait out of every step, so none of its rules could see it.
// Not run under --compat smdebug's ProfilerReport (smdebug has no such rule).

#include <fmt/format.h>

#include "rules/registry.hpp"
#include "sprof/iterations.hpp"

namespace sprof::rules {
namespace {

class InputBound : public Rule {
 public:
  InputBound(const Params& params, const RuleContext& context) : params_(params) {
    threshold_ = params.number("threshold");
    min_iterations_ = params.integer("min_iterations");
    loop_ = *context.training_loop;
  }

  void on_window(const Window&) override {}

  void finish() override {
    if (!loop_) return;
    const IterationStats& l = *loop_;
    datapoints_ = static_cast<int64_t>(l.iterations);
    details_["mode"] = l.mode;
    details_["iterations"] = l.iterations;
    details_["input_wait_percent"] = 100 * l.wait_share();
    details_["dataloader_percent"] = 100 * l.dataloader_share();
    details_["step_percent"] = 100 * l.step_share();
    details_["input_wait_p50_s"] = l.wait.p50;
    details_["input_wait_p95_s"] = l.wait.p95;
    details_["step_p50_s"] = l.step.p50;
    details_["iteration_p50_s"] = l.iteration.p50;
    details_["verdict"] = input_bound_class(l.wait_share());
    if (datapoints_ >= min_iterations_ && 100 * l.wait_share() > threshold_) {
      violations_ = 1;
      triggered_ = 1;
    }
  }

  std::string rule_parameters() const override {
    return fmt::format("threshold:{}\nmin_iterations:{}", params_.str("threshold"), params_.str("min_iterations"));
  }

  std::string evidence() const override {
    const IterationStats& l = *loop_;
    std::string text = fmt::format("{}: {:.1f}% of {} iterations waiting for input", l.mode, 100 * l.wait_share(),
                                   l.iterations);
    if (l.dataloader_s > 0) text += fmt::format(" (DataLoader {:.1f}%)", 100 * l.dataloader_share());
    text += fmt::format(", p50 wait {:.1f} ms against a p50 step of {:.1f} ms", 1e3 * l.wait.p50, 1e3 * l.step.p50);
    if (datapoints_ < min_iterations_) {
      text += fmt::format("; {} iterations, {} needed", datapoints_, min_iterations_);
    } else {
      text += fmt::format(" ({} {} {}%)", input_bound_class(l.wait_share()), triggered_ ? "above" : "within",
                          params_.str("threshold"));
    }
    return text;
  }

 private:
  Params params_;
  double threshold_ = 20;
  int64_t min_iterations_ = 10;
  std::optional<IterationStats> loop_;
};

}  // namespace

RuleDef input_bound_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "InputBound",
      "The training loop waits for input (between one step's end and the next step's start) more than threshold "
      "percent of its time (sprof's own rule).",
      "Feed the loop faster: more DataLoader workers, pin_memory, persistent_workers and a larger prefetch_factor; "
      "move decoding and augmentation out of the training thread, or cache the prepared dataset.",
      {{"threshold", ParamKind::percent, "20", "most time waiting for input, in % of the iterations' time"},
       {"min_iterations", ParamKind::count, "10", "fewest measured iterations before the rule judges"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs); the rule reads the whole loop"}},
      true};
  def.sprof_only = true;
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<InputBound>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (!has_step_events(input)) return "no step events (Step:ModeKeys.*) in the framework timeline";
    if (!training_loop(input.framework())) {
      return "no wait before any step could be measured (one step per process, and no DataLoader events)";
    }
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
