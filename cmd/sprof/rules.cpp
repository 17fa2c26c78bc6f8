// sprof rules DIR: SageMaker Debugger's built-in profiler rules over a profile directory.

#include <algorithm>
#include <chrono>
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "fail_on.hpp"
#include "sprof/exit_codes.hpp"
#include "sprof/rules.hpp"
#include "text_table.hpp"

namespace sprof::cli {
namespace {

struct RulesCommandOptions {
  std::string profile_dir;
  std::vector<std::string> rules;
  std::vector<std::string> params;
  std::string compat;
  std::string format = "table";
  bool json = false;
  std::string output_dir;
  std::string fail_on;
  bool list = false;
};

const char* status_color(rules::RuleStatus status) {
  switch (status) {
    case rules::RuleStatus::issues_found: return "31";
    case rules::RuleStatus::no_issues_found: return "32";
    case rules::RuleStatus::no_data: return "2";
  }
  return "";
}

std::string render_table(const std::vector<rules::RuleResult>& results, bool color) {
  TextTable table({"RULE", "STATUS", "TRIGGERED", "DATAPOINTS", "EVIDENCE", "RECOMMENDATION"});
  for (const auto& r : results) {
    table.add_row({{r.rule, ""},
                   {rules::to_string(r.status), status_color(r.status)},
                   {std::to_string(r.triggered), ""},
                   {std::to_string(r.datapoints), ""},
                   {r.evidence, ""},
                   {r.status == rules::RuleStatus::issues_found ? r.recommendation : "-", ""}});
  }
  return table.render(color, terminal_width());
}

std::string render_json(const std::vector<rules::RuleResult>& results, const RulesCommandOptions& options) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["profile"] = options.profile_dir;
  out["compat"] = options.compat.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(options.compat);
  out["rules"] = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["rule"] = r.rule;
    entry["status"] = rules::to_string(r.status);
    entry["RuleTriggered"] = r.triggered;
    entry["Violations"] = r.violations;
    entry["Details"] = nlohmann::ordered_json::parse(r.details_json, nullptr, false);
    entry["Datapoints"] = r.datapoints;
    entry["RuleParameters"] = r.rule_parameters;
    entry["evidence"] = r.evidence;
    entry["recommendation"] = r.recommendation;
    out["rules"].push_back(std::move(entry));
  }
  return out.dump(2) + "\n";
}

std::string render_csv(const std::vector<rules::RuleResult>& results) {
  std::string out = csv_line({"rule", "status", "triggered", "violations", "datapoints", "evidence",
                              "recommendation", "rule_parameters"});
  for (const auto& r : results) {
    out += csv_line({r.rule, rules::to_string(r.status), std::to_string(r.triggered), std::to_string(r.violations),
                     std::to_string(r.datapoints), r.evidence, r.recommendation, r.rule_parameters});
  }
  return out;
}

std::string render_catalog() {
  std::string out;
  for (const auto& info : rules::rule_catalog()) {
    out += fmt::format("{}\n  {}\n", info.name, info.description);
    for (const auto& p : info.params) {
      out += fmt::format("  {}_{}={}  {}\n", info.name, p.name, p.default_value, p.description);
    }
    if (!info.overridable && info.name != "ProfilerReport") out += "  (parameters cannot be overridden)\n";
  }
  return out;
}

Result<int> run_rules_command(const RulesCommandOptions& options) {
  if (options.list) {
    fmt::print("{}", render_catalog());
    return kExitSuccess;
  }
  if (options.profile_dir.empty()) return make_error(ErrorKind::usage, "sprof rules: DIR is required (or --list)");
  std::string format = options.json ? "json" : options.format;
  rules::RulesOptions run_options;
  run_options.rules = options.rules;
  run_options.params = options.params;
  run_options.compat_smdebug = options.compat == "smdebug";
  // Names and parameters are checked before the profile is read, so typos fail fast.
  SPROF_TRY(auto ignored, rules::run_rules(rules::RulesInput{}, run_options));
  (void)ignored;
  SPROF_TRY(auto input, rules::load_rules_input(options.profile_dir));
  SPROF_TRY(auto results, rules::run_rules(input, run_options));
  SPROF_TRY(auto fail_on, parse_fail_on(options.fail_on, results));

  if (!options.output_dir.empty()) {
    int64_t epoch = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    SPROF_TRY(auto written, rules::write_rule_output(options.output_dir, results, epoch));
    spdlog::info("rule reports written to {}", written.string());
  }
  if (format == "json") {
    fmt::print("{}", render_json(results, options));
  } else if (format == "csv") {
    fmt::print("{}", render_csv(results));
  } else {
    fmt::print("{}", render_table(results, global_options().color_enabled));
  }
  std::fflush(stdout);
  return fail_on_exit_code(results, fail_on, options.fail_on);
}

}  // namespace

void add_rules(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<RulesCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "rules", "Run SageMaker Debugger's built-in profiler rules (ProfilerReport and its sub-rules) on a profile");
  sub->add_option("DIR", options->profile_dir, "Profile directory (sprof's or smdebug's)");
  sub->add_option("-r,--rule", options->rules,
                  "Run only this rule (repeatable; case-insensitive). Default: ProfilerReport, i.e. all");
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
  sub->add_flag("--list", options->list, "List the rules, their parameters and defaults, and exit");
  commands.push_back(Command{sub, [options] { return run_rules_command(*options); }});
}

}  // namespace sprof::cli
