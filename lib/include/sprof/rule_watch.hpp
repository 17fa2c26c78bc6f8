#pragma once
// Rules while `record` runs (`record --rule NAME[:param=value,...] --rule-interval S --action
// NAME=stop|log|exec:CMD`): SageMaker Debugger's rules evaluated on the data recorded so far
// every S seconds, on a thread of their own so sampling never pauses, and once more at the end.
// Each evaluation rewrites the profile's rule-output/ProfilerReport-<start>/ (the layout `sprof
// rules --output-dir` writes); a verdict that changes is one line on stderr. A rule's action fires
// once per new finding (its trigger count grew): stop ends the training job gracefully (SIGINT to
// the command, SIGTERM after the grace, SIGKILL after a second one) and sprof.json says which rule
// stopped it and why; exec runs a notifier with the verdict in its environment; log only records.

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sprof/custom_rules.hpp"
#include "sprof/launch.hpp"
#include "sprof/result.hpp"
#include "sprof/rules.hpp"

namespace sprof::watch {

struct RuleAction {
  enum class Kind { log, stop, exec };
  Kind kind = Kind::log;
  std::string command;  // exec: run by /bin/sh -c
};

struct RuleWatchOptions {
  // Names (case-insensitive); "all": ProfilerReport's eleven. Custom rules: those named, or all of
  // them when none is named; built-ins only when named.
  std::vector<std::string> rules;
  std::vector<std::string> params;  // "<Rule>_<param>=<value>"
  double interval_s = 60;
  std::map<std::string, RuleAction> actions;  // by rule name as the catalogue spells it
  double stop_grace_s = 30;
  rules::CustomRules custom;  // --rule-file, --rule-program
  // --rule/--rules and --action as given: create() parses them (parse_rule_flag, parse_action_flag)
  // into the fields above, after `custom` is set.
  std::vector<std::string> rule_flags;
  std::vector<std::string> action_flags;

  // Whether any rule is to be watched: one named, or a custom rule given.
  bool watches_any() const { return !rules.empty() || !rule_flags.empty() || !custom.empty(); }
};

// "StepOutlier:stddev=2,n_outliers=5" -> the rule and its params ("StepOutlier_stddev=2", ...).
Status parse_rule_flag(std::string_view text, RuleWatchOptions& options);
// "StepOutlier=stop", "LowGPUUtilization=exec:notify.sh", "CPUBottleneck=log".
Status parse_action_flag(std::string_view text, RuleWatchOptions& options);

// The hook; usage errors for unknown rules, parameters or an action for a rule not watched.
// Rule programs start at the first evaluation and stay up until the last.
class RuleWatch : public launch::RecordHooks {
 public:
  static Result<std::unique_ptr<RuleWatch>> create(RuleWatchOptions options);
  ~RuleWatch() override;
  void on_start(const launch::RecordContext& context) override;
  void on_housekeeping(int64_t now_ns) override;
  Status on_finish(const std::filesystem::path& output_dir, store::Manifest& manifest) override;
  std::string cost_name() const override { return "rules"; }

  // The final evaluation's results (after on_finish), for --fail-on.
  const std::vector<rules::RuleResult>& final_results() const;

 private:
  struct Impl;
  explicit RuleWatch(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

inline constexpr const char* kRuleWatchSection = "live_rules";

}  // namespace sprof::watch
