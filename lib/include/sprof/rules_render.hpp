#pragma once
// Rule results, rendered: the `rules` table, JSON and CSV, the catalogue of --list, and the
// pieces `analyze` shares with them (one JSON object and one colour per result).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/analyze_render.hpp"
#include "sprof/rules.hpp"

namespace sprof::render {

// ANSI colour of a status: issues red, no issues green, no data dim.
const char* status_color(rules::RuleStatus status);

// {rule, status, RuleTriggered, Violations, [Details,] Datapoints, RuleParameters, evidence,
// recommendation}: SageMaker's rule-report keys plus sprof's.
nlohmann::ordered_json rule_result_json(const rules::RuleResult& result, bool with_details);

std::string rules_table(const std::vector<rules::RuleResult>& results, const TextStyle& style);
// compat: empty, or the --compat the results were computed with.
std::string rules_json(const std::vector<rules::RuleResult>& results, const std::string& profile_dir,
                       const std::string& compat);
std::string rules_csv(const std::vector<rules::RuleResult>& results);
// Every rule with its description and parameters (name_param=default  description), then the
// custom rules given.
std::string rules_catalog(const std::vector<rules::RuleInfo>& custom = {});

}  // namespace sprof::render
