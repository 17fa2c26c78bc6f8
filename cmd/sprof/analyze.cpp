// sprof analyze DIR: one page about a training job (job, phases, steps, functions, system usage, rules);
// sprof report DIR: the same as one self-contained HTML page with charts and flame graphs.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "custom_rule_flags.hpp"
#include "fail_on.hpp"
#include "sprof/analyze_render.hpp"
#include "sprof/open_profile.hpp"
#include "exit_codes.hpp"
#include "output_format.hpp"
#include "query_args.hpp"

namespace sprof::cli {
namespace {

struct AnalyzeCommandOptions {
  ProfileArgument profile_dir;
  std::vector<std::string> params;
  std::string format = "table";
  bool json = false;
  std::string fail_on;
  TimeViewFlags time;
  size_t top = 10;
  size_t slowest = 3;
  std::string html;  // --html FILE / report -o FILE
  rules::CustomRuleSources custom;
};

Status write_html(const query::Profile& profile, const report::AnalyzeReport& report, const std::string& path) {
  SPROF_TRY(render::WrittenPage page, render::write_analyze_html(profile, report, path));
  if (!global_options().quiet) {
    fmt::print(stderr, "sprof: wrote {} ({:.1f} MB: {} flame graphs, {} steps)\n", path,
               static_cast<double>(page.bytes) / 1e6, page.flame_graphs, report.steps.size());
  }
  return {};
}

// `custom` (the loaded --rule-file/--rule-program rules) must outlive the analysis.
report::AnalyzeOptions analyze_options_of(const AnalyzeCommandOptions& options, const rules::CustomRuleSet& custom) {
  report::AnalyzeOptions analyze_options;
  analyze_options.rules.params = options.params;
  if (!custom.rules().empty()) analyze_options.rules.custom = &custom.rules();
  analyze_options.time_view = options.time.view();
  analyze_options.top_functions = options.top;
  analyze_options.slowest_steps = options.slowest;
  return analyze_options;
}

Result<int> run_analyze(const AnalyzeCommandOptions& options) {
  if (options.profile_dir.empty()) return make_error(ErrorKind::usage, "sprof analyze: DIR is required");
  SPROF_TRY(auto custom, rules::CustomRuleSet::load(options.custom));
  SPROF_TRY(auto profile, query::Profile::open(options.profile_dir.where));
  SPROF_TRY(auto report, report::analyze(profile, analyze_options_of(options, *custom)));
  SPROF_TRY(auto fail_on, rules::parse_fail_on(options.fail_on, report.rules));
  if (!options.html.empty()) SPROF_TRY_STATUS(write_html(profile, report, options.html));
  if (options.json || options.format == "json") {
    fmt::print("{}", render::analyze_json(report));
  } else {
    render::TextStyle style{global_options().color_enabled, terminal_width()};
    fmt::print("{}", render::analyze_text(report, style));
  }
  std::fflush(stdout);
  return fail_on_exit_code(report.rules, fail_on, options.fail_on);
}

// What the page holds, shared by analyze and report: rule parameters, idle samples, top functions.
void add_content_options(CLI::App* sub, AnalyzeCommandOptions& options) {
  sub->add_option("-p,--param", options.params,
                  "Override a rule parameter, ProfilerReport style: <Rule>_<parameter>=<value> (repeatable)");
  add_time_view_flags(sub, options.time, "Function tables");
  sub->add_option("--top", options.top, "Functions in the top-functions table")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  add_custom_rule_flags(sub, options.custom);
}

}  // namespace

void add_analyze(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<AnalyzeCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "analyze", "One page about a job: summary, phases, step times, top functions, system usage, rule findings");
  sub->alias("analyse");  // the British spelling runs it too
  add_profile_argument(sub, "DIR", options->profile_dir, "Profile directory (sprof's or smdebug's)");
  sub->add_option("-f,--format", options->format, "Output: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_flag("--json", options->json, "Short for --format json");
  add_content_options(sub, *options);
  sub->add_option("--fail-on", options->fail_on,
                  "Exit with status 3 when one of these rules finds issues: any, or RULE[,RULE...]");
  sub->add_option("--slowest", options->slowest, "Slowest steps to break down")->capture_default_str();
  sub->add_option("--html", options->html, "Also write the HTML report (as sprof report) to this file");
  commands.push_back(Command{sub, [options] { return run_analyze(*options); }});

  auto report_options = std::make_shared<AnalyzeCommandOptions>();
  report_options->html = "report.html";
  CLI::App* report_sub = app.add_subcommand(
      "report", "The analysis as one self-contained HTML page: charts of step times and system metrics, flame "
                "graphs of the run, each mode, phase and step, functions, rules, GPU");
  add_profile_argument(report_sub, "DIR", report_options->profile_dir, "Profile directory (sprof's or smdebug's)")->required();
  report_sub->add_option("-o,--output", report_options->html, "The HTML file to write")->capture_default_str();
  add_content_options(report_sub, *report_options);
  commands.push_back(Command{report_sub, [report_options]() -> Result<int> {
    SPROF_TRY(auto custom, rules::CustomRuleSet::load(report_options->custom));
    SPROF_TRY(auto profile, query::Profile::open(report_options->profile_dir.where));
    SPROF_TRY(auto report, report::analyze(profile, analyze_options_of(*report_options, *custom)));
    SPROF_TRY_STATUS(write_html(profile, report, report_options->html));
    return 0;
  }});
}

}  // namespace sprof::cli
