// sprof rules DIR: SageMaker Debugger's built-in profiler rules over a profile directory.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "custom_rule_flags.hpp"
#include "fail_on.hpp"
#include "exit_codes.hpp"
#include "output_format.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/rules.hpp"
#include "sprof/rules_render.hpp"

namespace sprof::cli {
namespace {

struct RulesCommandOptions {
  ProfileArgument profile_dir;
  std::vector<std::string> rules;
  std::vector<std::string> params;
  std::string compat;
  std::string format = "table";
  bool json = false;
  std::string output_dir;
  std::string fail_on;
  bool list = false;
  rules::CustomRuleSources custom;
};

Result<int> run_rules_command(const RulesCommandOptions& options) {
  SPROF_TRY(auto custom, rules::CustomRuleSet::load(options.custom));
  if (options.list) {
    fmt::print("{}", render::rules_catalog(custom->rules().catalog()));
    return kExitSuccess;
  }
  if (options.profile_dir.empty()) return make_error(ErrorKind::usage, "sprof rules: DIR is required (or --list)");
  std::string format = options.json ? "json" : options.format;
  rules::RulesOptions run_options;
  run_options.rules = options.rules;
  run_options.params = options.params;
  run_options.compat_smdebug = options.compat == "smdebug";
  if (!custom->rules().empty()) run_options.custom = &custom->rules();
  // Names and parameters are checked before the profile is read, so typos fail fast.
  SPROF_TRY_STATUS(rules::check_rules(run_options));
  SPROF_TRY(auto profile, query::Profile::open(options.profile_dir.where));
  SPROF_TRY(auto input, rules::load_rules_input(profile));
  SPROF_TRY(auto results, rules::run_rules(input, run_options));
  SPROF_TRY(auto fail_on, rules::parse_fail_on(options.fail_on, results));

  if (!options.output_dir.empty()) {
    SPROF_TRY(auto written, rules::write_rule_output(options.output_dir, results));
    spdlog::info("rule reports written to {}", written.string());
  }
  if (format == "json") {
    fmt::print("{}", render::rules_json(results, options.profile_dir.text, options.compat));
  } else if (format == "csv") {
    fmt::print("{}", render::rules_csv(results));
  } else {
    fmt::print("{}", render::rules_table(results, {global_options().color_enabled, terminal_width()}));
  }
  std::fflush(stdout);
  return fail_on_exit_code(results, fail_on, options.fail_on);
}

}  // namespace

void add_rules(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<RulesCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "rules", "Run SageMaker Debugger's built-in profiler rules (ProfilerReport and its sub-rules) on a profile");
  add_profile_argument(sub, "DIR", options->profile_dir, "Profile directory (sprof's or smdebug's)");
  sub->add_option("-r,--rule", options->rules,
                  "Run only this rule, built-in or custom (repeatable; case-insensitive). Default: ProfilerReport, "
                  "i.e. all built-ins, and every custom rule");
  sub->add_option("-p,--param", options->params,
                  "Override a rule parameter, ProfilerReport style: <Rule>_<parameter>=<value> (repeatable)");
  sub->add_option("--compat", options->compat,
                  "Reproduce another implementation's numbers, bugs included: smdebug")
      ->check(CLI::IsMember({"smdebug"}));
  sub->add_option("-f,--format", options->format, "Output: table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  sub->add_flag("--json", options->json, "Short for --format json");
  sub->add_option("-o,--output", options->output_dir,
                  "Also write SageMaker's rule-output/ProfilerReport-<epoch>/profiler-output/ layout here");
  sub->add_option("--fail-on", options->fail_on,
                  "Exit with status 3 when one of these rules finds issues: any, or RULE[,RULE...]");
  sub->add_flag("--list", options->list,
                "List the rules (with --rule-file/--rule-program, the custom ones too), their parameters and "
                "defaults, and exit");
  add_custom_rule_flags(sub, options->custom);
  commands.push_back(Command{sub, [options] { return run_rules_command(*options); }});
}

}  // namespace sprof::cli
