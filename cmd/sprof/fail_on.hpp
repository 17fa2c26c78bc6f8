#pragma once
// --fail-on any|RULE[,RULE...] of `rules`, `analyze` and `record`: exit status 3 when a named rule
// found issues (rules::parse_fail_on reads the names).

#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "exit_codes.hpp"
#include "sprof/rules.hpp"

namespace sprof::cli {

// `text` is the --fail-on value as given, for the log line.
inline int fail_on_exit_code(const std::vector<rules::RuleResult>& results, const std::vector<std::string>& fail_on,
                             const std::string& text) {
  const rules::RuleResult* failing = rules::first_failing(results, fail_on);
  if (failing == nullptr) return kExitSuccess;
  spdlog::info("{} found issues (--fail-on {})", failing->rule, text);
  return kExitIssuesFound;
}

}  // namespace sprof::cli
