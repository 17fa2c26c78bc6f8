#pragma once
// SageMaker Debugger's built-in profiler rules (ProfilerReport and its eleven sub-rules), run offline
// over a profile directory: system metrics plus the framework timeline. Algorithms, defaults,
// parameter validation and report shapes follow smdebug's rule code (awslabs/sagemaker-debugger,
// smdebug/profiler/analysis/rules/*.py at commit 2222c547a94623e2e3288a196e598f066eaee48d, the last
// one that has it; parameter checks as in awslabs/sagemaker-debugger-rulesconfig,
// smdebug_rulesconfig/profiler_rules/rules.py); man/sprof.1 (sprof rules) describes each rule.
// Three known smdebug bugs are fixed unless compat_smdebug is set.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sprof/gpu_trace.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/result.hpp"
#include "sprof/system_metrics.hpp"
#include "sprof/trace_events.hpp"

namespace sprof::rules {

enum class RuleStatus { issues_found, no_issues_found, no_data };
const char* to_string(RuleStatus status);  // "IssuesFound", "NoIssuesFound", "NoData"

enum class ParamKind {
  percent,   // a number in [0, 100]
  positive,  // a number > 0
  count,     // an integer > 0
  mode,      // a string, or None (unset)
};

struct ParamInfo {
  std::string name;           // lower case, as in `<Rule>_<name>`
  ParamKind kind = ParamKind::positive;
  std::string default_value;  // as smdebug prints it ("50", "0.2", "None")
  std::string description;
};

struct RuleInfo {
  std::string name;            // canonical, e.g. "CPUBottleneck"
  std::string description;     // one sentence
  std::string recommendation;  // what to do when it finds issues
  std::vector<ParamInfo> params;
  bool overridable = true;     // accepts `<Rule>_<param>` overrides (smdebug: all but OverallFrameworkMetrics)
  std::string source = {};     // a custom rule's file or program (sprof/custom_rules.hpp); "" for built-ins
};

// ProfilerReport first, then the eleven sub-rules in the order ProfilerReport runs them.
const std::vector<RuleInfo>& rule_catalog();

struct CustomRules;

struct RulesOptions {
  std::vector<std::string> rules;   // rule names, case-insensitive; empty means ProfilerReport (all)
  std::vector<std::string> params;  // "<Rule>_<param>=<value>" (ProfilerReport's override syntax)
  bool compat_smdebug = false;      // reproduce smdebug's numbers, bugs included
  // Users' rules (sprof/custom_rules.hpp): `rules` may name them; with no `rules`, all of them
  // run after ProfilerReport. They never count in ProfilerReport's summary.
  const CustomRules* custom = nullptr;
};

struct RuleResult {
  std::string rule;
  RuleStatus status = RuleStatus::no_data;
  // smdebug's report fields.
  int64_t triggered = 0;
  int64_t violations = 0;
  int64_t datapoints = 0;
  std::string details_json = "{}";  // the Details object, JSON text
  std::string rule_parameters;      // "k:v\nk:v"
  // For people: one line of evidence (or why there was no data) and what to do.
  std::string evidence;
  std::string recommendation;
};

// smdebug's <Rule>.json content: {"RuleTriggered", "Violations", "Details", "Datapoints", "RuleParameters"}.
std::string report_json(const RuleResult& result);

struct RulesInput {
  // Where it was read, if from a profile: custom rules read its manifest and samples.
  std::optional<query::Profile> profile;
  std::vector<store::SystemMetric> system;  // smdebug's order (file timestamp, then line)
  // Shared, not copied: a caller that holds the events already (a Profile) lends them, and a
  // long job has millions. framework() reads them (none when unset).
  std::shared_ptr<const std::vector<store::TraceEvent>> framework_events;
  const std::vector<store::TraceEvent>& framework() const;
  void set_framework(std::vector<store::TraceEvent> events) {
    framework_events = std::make_shared<const std::vector<store::TraceEvent>>(std::move(events));
  }
  std::vector<std::string> warnings;        // trace files skipped while loading
  // The machine each system-metrics node id stands for (store::system_node_hosts): evidence
  // names machines; Details keep smdebug's node ids.
  std::map<std::string, std::string> system_hosts;
};

// The profile's system metrics and framework timeline. A directory with neither is bad_input; a
// corrupt metrics line is bad_input naming file and line.
Result<RulesInput> load_rules_input(const query::Profile& profile);

// When the system metrics hold no GPUUtilization but the profile holds GPU activity recorded by
// libsprof_cupti.so (gpu/), adds GPUUtilization per system tick from the kernels (the share of
// the tick's interval with a kernel running, as NVML measures it) and says so in `warnings`.
// load_rules_input does this; a caller building RulesInput itself calls it with the trace it has
// read (`epoch_offset_ns`: epoch ns = trace ns + this).
void add_kernel_utilization(const store::GpuTrace& trace, int64_t epoch_offset_ns, RulesInput& input);

// Checks rule names and parameters (usage errors that list the valid names) without running anything.
Status check_rules(const RulesOptions& options);

// Checks rule names and parameters first (usage errors that list the valid names), then runs the
// selected rules. ProfilerReport (the default) runs all eleven sub-rules and comes first in the result.
Result<std::vector<RuleResult>> run_rules(const RulesInput& input, const RulesOptions& options);

// Writes what SageMaker writes: <out>/rule-output/ProfilerReport-<epoch_s>/profiler-output/
// profiler-reports/<Rule>.json for every sub-rule, plus rules-summary.json (sprof's: statuses and
// counts) beside profiler-reports/. Returns the profiler-output directory. epoch_s < 0: now.
Result<std::filesystem::path> write_rule_output(const std::filesystem::path& out_dir,
                                                const std::vector<RuleResult>& results, int64_t epoch_s = -1);

// --fail-on: the canonical names of the rules `text` ("any" or RULE[,RULE...], any case) names
// among those that ran; an unknown name is a usage error listing the rules run. Empty text: none.
Result<std::vector<std::string>> parse_fail_on(const std::string& text, const std::vector<RuleResult>& results);
// The first of `results` named in `names` that found issues; nullptr when none did.
const RuleResult* first_failing(const std::vector<RuleResult>& results, const std::vector<std::string>& names);

}  // namespace sprof::rules
