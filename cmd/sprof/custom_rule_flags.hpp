#pragma once
// --rule-file, --rule-program and --rule-timeout of `rules`, `analyze`, `report` and `record`:
// users' own rules (loaded by rules::CustomRuleSet).

#include <CLI/CLI.hpp>

#include "sprof/custom_rules.hpp"

namespace sprof::cli {

void add_custom_rule_flags(CLI::App* sub, rules::CustomRuleSources& sources);

}  // namespace sprof::cli
