// Users' rule flags, shared by `rules` and `record`.

#include "custom_rule_flags.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "option_checks.hpp"
#include "sprof/bootstrap.hpp"

namespace sprof::cli {

void add_custom_rule_flags(CLI::App* sub, CustomRuleFlags& flags) {
  sub->add_option("--rule-file", flags.files,
                  "Add the rules of this JSON rule file: threshold rules on step_time, function, cpu_utilization, "
                  "io_wait, gpu_utilization, gpu_memory_utilization, memory_used or a system dimension, and rule "
                  "programs (repeatable; see CUSTOM RULES in sprof(1))");
  sub->add_option("--rule-program", flags.programs,
                  "Add a rule program, [NAME=]COMMAND: it reads JSON records on stdin and answers each evaluate "
                  "record with a verdict line (repeatable)");
  sub->add_option("--rule-timeout", flags.timeout_s,
                  "Seconds a rule program may take to answer one evaluation before it is disabled")
      ->capture_default_str()
      ->check(finite_in(0.1, 86400.0));
}

Result<std::unique_ptr<CustomRuleSet>> CustomRuleSet::load(const CustomRuleFlags& flags) {
  auto set = std::unique_ptr<CustomRuleSet>(new CustomRuleSet());
  set->rules_.timeout_s = flags.timeout_s;
  for (const auto& file : flags.files) SPROF_TRY_STATUS(rules::add_rule_file(file, set->rules_));
  for (const auto& program : flags.programs) SPROF_TRY_STATUS(rules::add_rule_program(program, set->rules_));
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

}  // namespace sprof::cli
