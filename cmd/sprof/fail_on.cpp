#include "fail_on.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "exit_codes.hpp"

namespace sprof::cli {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

Result<std::vector<std::string>> parse_fail_on(const std::string& text, const std::vector<rules::RuleResult>& results) {
  std::vector<std::string> names;
  if (text.empty()) return names;
  if (lower(text) == "any") {
    for (const auto& r : results) names.push_back(r.rule);
    return names;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (name.empty()) continue;
    auto it = std::find_if(results.begin(), results.end(),
                           [&](const rules::RuleResult& r) { return lower(r.rule) == lower(name); });
    if (it == results.end()) {
      std::vector<std::string> ran;
      for (const auto& r : results) ran.push_back(r.rule);
      return make_error(ErrorKind::usage, "--fail-on {}: not one of the rules run ({}), nor 'any'", name,
                        fmt::join(ran, ", "));
    }
    names.push_back(it->rule);
  }
  return names;
}

int fail_on_exit_code(const std::vector<rules::RuleResult>& results, const std::vector<std::string>& fail_on,
                      const std::string& text) {
  for (const auto& r : results) {
    if (r.status == rules::RuleStatus::issues_found && std::find(fail_on.begin(), fail_on.end(), r.rule) != fail_on.end()) {
      spdlog::info("{} found issues (--fail-on {})", r.rule, text);
      return kExitIssuesFound;
    }
  }
  return kExitSuccess;
}

}  // namespace sprof::cli
