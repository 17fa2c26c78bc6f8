#pragma once
// --fail-on any|RULE[,RULE...] of `rules` and `analyze`: exit status 3 when a named rule found issues.

#include <string>
#include <vector>

#include "sprof/result.hpp"
#include "sprof/rules.hpp"

namespace sprof::cli {

// The canonical names of the rules `text` names among those that ran; an unknown name is a usage
// error listing the rules run. Empty text: none.
Result<std::vector<std::string>> parse_fail_on(const std::string& text, const std::vector<rules::RuleResult>& results);

// The exit status: kExitIssuesFound (logging which rule) when a rule in `fail_on` found issues,
// else kExitSuccess. `text` is the --fail-on value as given, for the log line.
int fail_on_exit_code(const std::vector<rules::RuleResult>& results, const std::vector<std::string>& fail_on,
                      const std::string& text);

}  // namespace sprof::cli
