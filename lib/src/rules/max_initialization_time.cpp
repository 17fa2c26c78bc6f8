// MaxInitializationTime (smdebug/profiler/analysis/rules/max_initialization_time.py): the training
// loop has not started `threshold` minutes after the job started.
//
// smdebug counts windows that start more than `threshold` minutes after the first window while no
// step has been seen; RuleTriggered keeps that count. Offline, sprof also fires (once) when the first
// step started more than `threshold` minutes after the job start, or the job ran longer than that
// without any step, even if no window satisfied smdebug's condition (--compat smdebug: windows only).

#include <limits>

#include <fmt/format.h>

#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

class MaxInitializationTime : public Rule {
 public:
  MaxInitializationTime(const Params& params, const RuleContext& context)
      : params_(params), compat_(context.compat), first_timestamp_us_(context.first_timestamp_us) {
    threshold_us_ = params.number("threshold") * 60000000.0;
    details_["step_num"] = Json::object();
  }

  void on_window(const Window& window) override {
    for (const store::SystemMetric* m : window.system) {
      system_start_ = std::min(system_start_, m->timestamp);
      system_end_ = std::max(system_end_, m->timestamp);
      details_["job_start"] = system_start_;
      details_["job_end"] = system_end_;
    }
    for (const store::TraceEvent* e : window.framework) {
      job_start_us_ = std::min(job_start_us_, e->start_us);
      job_end_us_ = std::max(job_end_us_, e->end_us);
      if (e->name.find("Step:ModeKeys") == std::string::npos) continue;
      ++datapoints_;
      Json& steps = details_["step_num"];
      if (!steps.contains("first")) {
        steps["first"] = e->start_us;
        first_step_us_ = e->start_us;
      } else {
        steps["last"] = e->start_us;
      }
    }
    if (static_cast<double>(window.start_us - first_timestamp_us_) > threshold_us_ && !first_step_us_) {
      ++violations_;
      ++triggered_;
    }
  }

  void finish() override {
    if (system_start_ != std::numeric_limits<double>::infinity()) {
      job_start_us_ = std::min(job_start_us_, static_cast<int64_t>(system_start_ * 1e6));
      job_end_us_ = std::max(job_end_us_, static_cast<int64_t>(system_end_ * 1e6));
    }
    if (compat_ || triggered_ > 0 || job_start_us_ == std::numeric_limits<int64_t>::max()) return;
    bool late = first_step_us_ ? static_cast<double>(*first_step_us_ - job_start_us_) > threshold_us_
                               : static_cast<double>(job_end_us_ - job_start_us_) > threshold_us_;
    if (late) {
      violations_ = 1;
      triggered_ = 1;
    }
  }

  std::string rule_parameters() const override { return fmt::format("threshold:{}", params_.str("threshold")); }

  // No step yet and a job shorter than the threshold: whether initialization is slow cannot be
  // told (smdebug says NoIssuesFound; --compat smdebug keeps that).
  std::optional<std::string> nothing_to_judge() const override {
    if (compat_ || first_step_us_ || job_start_us_ == std::numeric_limits<int64_t>::max()) return std::nullopt;
    return fmt::format("no training step in {:.1f} min of job (threshold {} min): too early to tell",
                       static_cast<double>(job_end_us_ - job_start_us_) / 60e6, params_.str("threshold"));
  }

  std::string evidence() const override {
    if (job_start_us_ == std::numeric_limits<int64_t>::max()) return "no data";
    if (first_step_us_) {
      return fmt::format("the first step started {:.1f} min after the job started (threshold {} min)",
                         static_cast<double>(*first_step_us_ - job_start_us_) / 60e6, params_.str("threshold"));
    }
    return fmt::format("no training step in {:.1f} min of job (threshold {} min)",
                       static_cast<double>(job_end_us_ - job_start_us_) / 60e6, params_.str("threshold"));
  }

 private:
  Params params_;
  bool compat_;
  int64_t first_timestamp_us_;
  double threshold_us_;
  double system_start_ = std::numeric_limits<double>::infinity();
  double system_end_ = 0;
  int64_t job_start_us_ = std::numeric_limits<int64_t>::max();
  int64_t job_end_us_ = std::numeric_limits<int64_t>::min();
  std::optional<int64_t> first_step_us_;
};

}  // namespace

RuleDef max_initialization_time_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "MaxInitializationTime",
      "The training loop did not start within `threshold` minutes of the job start.",
      "Initialization is slow: stream data instead of downloading it all up front, and check what runs before the "
      "first step.",
      {{"threshold", ParamKind::positive, "20", "minutes allowed before the first step"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<MaxInitializationTime>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (input.system.empty() && input.framework().empty()) return "no system metrics and no framework events";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
