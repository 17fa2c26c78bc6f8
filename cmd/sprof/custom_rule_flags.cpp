// Users' rule flags, shared by `rules` and `record`.

#include "custom_rule_flags.hpp"

#include "option_checks.hpp"

namespace sprof::cli {

void add_custom_rule_flags(CLI::App* sub, rules::CustomRuleSources& flags) {
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

}  // namespace sprof::cli
