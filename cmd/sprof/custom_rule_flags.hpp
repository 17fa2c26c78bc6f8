#pragma once
// --rule-file, --rule-program and --rule-timeout of `rules` and `record`: users' own rules.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sprof/custom_rules.hpp"
#include "sprof/result.hpp"
#include "sprof/temp_dir.hpp"

namespace sprof::cli {

struct CustomRuleFlags {
  std::vector<std::string> files;
  std::vector<std::string> programs;
  double timeout_s = 30;
};

void add_custom_rule_flags(CLI::App* sub, CustomRuleFlags& flags);

// The rules the flags name, checked, with the `sprof` package (sprof/rules.py) written to a
// private directory on the programs' PYTHONPATH; the directory goes with the object.
class CustomRuleSet {
 public:
  static Result<std::unique_ptr<CustomRuleSet>> load(const CustomRuleFlags& flags);
  ~CustomRuleSet();
  const rules::CustomRules& rules() const { return rules_; }

 private:
  rules::CustomRules rules_;
  TempDir package_dir_;  // sprof's Python package for rule programs
};

}  // namespace sprof::cli
