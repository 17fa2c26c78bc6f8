// --fail-on of `rules`, `analyze` and `record`: which rules' findings fail the run.

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sprof/rules.hpp"

namespace sprof::rules {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

Result<std::vector<std::string>> parse_fail_on(const std::string& text, const std::vector<RuleResult>& results) {
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
                           [&](const RuleResult& r) { return lower(r.rule) == lower(name); });
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

const RuleResult* first_failing(const std::vector<RuleResult>& results, const std::vector<std::string>& names) {
  for (const auto& r : results) {
    if (r.status == RuleStatus::issues_found && std::find(names.begin(), names.end(), r.rule) != names.end()) return &r;
  }
  return nullptr;
}

}  // namespace sprof::rules
