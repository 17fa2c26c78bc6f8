// ProfilerReport (smdebug/profiler/analysis/rules/profiler_report.py): runs the eleven sub-rules on
// the same data and found issues iff one of them did. Its parameters are the sub-rules' own, as
// `<Rule>_<param>` overrides.

#include <fmt/format.h>

#include "rules/registry.hpp"

namespace sprof::rules {

RuleInfo profiler_report_info() {
  return RuleInfo{"ProfilerReport",
                  "Runs every sub-rule below and reports issues when any of them finds some.",
                  "Follow the recommendations of the sub-rules that found issues.",
                  {},
                  false};
}

RuleResult summarize_profiler_report(const std::vector<RuleResult>& sub_rules) {
  RuleResult result;
  result.rule = "ProfilerReport";
  result.recommendation = profiler_report_info().recommendation;
  std::vector<std::string> found;
  size_t no_data = 0;
  nlohmann::ordered_json statuses = nlohmann::ordered_json::object();
  for (const auto& sub : sub_rules) {
    statuses[sub.rule] = to_string(sub.status);
    if (sub.status == RuleStatus::issues_found) found.push_back(sub.rule);
    if (sub.status == RuleStatus::no_data) ++no_data;
  }
  result.triggered = static_cast<int64_t>(found.size());
  result.violations = static_cast<int64_t>(found.size());
  result.datapoints = static_cast<int64_t>(sub_rules.size());
  result.details_json = nlohmann::ordered_json{{"rules", statuses}}.dump();
  if (!found.empty()) {
    result.status = RuleStatus::issues_found;
    result.evidence = fmt::format("{} of {} rules found issues: {}", found.size(), sub_rules.size(),
                                  fmt::join(found, ", "));
  } else if (no_data == sub_rules.size()) {
    result.status = RuleStatus::no_data;
    result.evidence = "no rule had the data it needs";
  } else {
    result.status = RuleStatus::no_issues_found;
    result.evidence = fmt::format("no rule found issues ({} of {} had no data)", no_data, sub_rules.size());
  }
  return result;
}

}  // namespace sprof::rules
