// A command's custom rules, loaded from its flags' files and programs.

#include <stdlib.h>

#include "sprof/bootstrap.hpp"
#include "sprof/custom_rules.hpp"

namespace sprof::rules {

Result<std::unique_ptr<CustomRuleSet>> CustomRuleSet::load(const CustomRuleSources& sources) {
  auto set = std::unique_ptr<CustomRuleSet>(new CustomRuleSet());
  set->rules_.timeout_s = sources.timeout_s;
  for (const auto& file : sources.files) SPROF_TRY_STATUS(add_rule_file(file, set->rules_));
  for (const auto& program : sources.programs) SPROF_TRY_STATUS(add_rule_program(program, set->rules_));
  if (set->rules_.programs.empty()) return set;
  // `from sprof.rules import Rule` works in a rule program whether sprof is installed or not.
  SPROF_TRY(set->package_dir_, TempDir::create("sprof-rules-"));
  SPROF_TRY_STATUS(bootstrap::write_python_files(set->package_dir_.path(), true));
  const char* path = ::getenv("PYTHONPATH");
  set->rules_.env.push_back("PYTHONPATH=" + set->package_dir_.path().string() +
                            (path != nullptr && *path != '\0' ? ":" + std::string(path) : ""));
  return set;
}

CustomRuleSet::~CustomRuleSet() = default;

}  // namespace sprof::rules
