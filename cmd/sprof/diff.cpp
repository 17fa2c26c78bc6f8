// sprof diff BASE NEW: what changed between two runs, and --fail-on-regression for CI.

#include <algorithm>

#include <fmt/format.h>

#include "command.hpp"
#include "exit_codes.hpp"
#include "output_format.hpp"
#include "query_args.hpp"
#include "sprof/diff_render.hpp"
#include "sprof/file_bytes.hpp"
#include "sprof/profile_diff.hpp"

namespace sprof::cli {
namespace {

struct DiffFlags {
  ProfileArgument base, next;
  std::string mode = "train";
  std::string base_steps, new_steps;
  double confidence = 0.95;
  size_t top = 15;
  bool json = false;
  TimeViewFlags time;
  std::optional<double> fail_on_regression;
  std::vector<std::string> thresholds;
  std::string html;  // -o diff.html
};

Result<int> run_diff(const DiffFlags& f) {
  report::DiffOptions options;
  options.base.path = f.base.where.path;
  options.base.source = f.base.where.source;
  options.next.path = f.next.where.path;
  options.next.source = f.next.where.source;
  options.mode = mode_from_name(f.mode);
  SPROF_TRY_STATUS(report::parse_diff_steps("--base-steps", f.base_steps, options.base));
  SPROF_TRY_STATUS(report::parse_diff_steps("--new-steps", f.new_steps, options.next));
  options.confidence = f.confidence;
  options.time_view = f.time.view();
  SPROF_TRY(report::RegressionThresholds thresholds, report::parse_thresholds(f.fail_on_regression, f.thresholds));
  SPROF_TRY(report::ProfileDiff diff, report::diff_profiles(options));
  std::vector<report::Regression> found = report::regressions(diff, thresholds);
  if (!f.html.empty()) {
    const std::string page = render::diff_html(diff, found, std::max<size_t>(f.top, 30));
    SPROF_TRY_STATUS(store::write_file_atomically(f.html, page));
    if (!global_options().quiet) fmt::print(stderr, "sprof: wrote {} ({:.1f} MB)\n", f.html, double(page.size()) / 1e6);
  }
  if (f.json) {
    fmt::print("{}", render::diff_json(diff, found));
  } else {
    fmt::print("{}", render::diff_text(diff, found, f.top, global_options().color_enabled, terminal_width()));
  }
  std::fflush(stdout);
  return found.empty() ? kExitSuccess : kExitIssuesFound;
}

}  // namespace

void add_diff(CLI::App& app, CommandList& commands) {
  auto f = std::make_shared<DiffFlags>();
  CLI::App* sub = app.add_subcommand(
      "diff", "What changed between two runs (or two step ranges of one): step times, functions and GPU kernels per "
              "step, each change with its confidence interval; --fail-on-regression for CI");
  add_profile_argument(sub, "BASE", f->base, "The run compared against: a profile directory, s3:// URL, or Chrome trace")->required();
  add_profile_argument(sub, "NEW", f->next, "The run compared: the same kinds")->required();
  sub->add_option("--mode", f->mode, "The steps compared: train, eval, predict or global")
      ->check(CLI::IsMember({"train", "eval", "predict", "global"}))
      ->capture_default_str();
  sub->add_option("--base-steps", f->base_steps, "Only these steps of BASE: FIRST-LAST, FIRST- or STEP");
  sub->add_option("--new-steps", f->new_steps, "Only these steps of NEW: FIRST-LAST, FIRST- or STEP");
  sub->add_option("--confidence", f->confidence, "Confidence of the intervals")->check(CLI::Range(0.5, 0.999))->capture_default_str();
  sub->add_option("--top", f->top, "Functions and kernels in the text tables")->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_flag("--json", f->json, "One JSON object: every function and kernel");
  sub->add_option("-o,--output", f->html,
                  "Also write the comparison as one HTML page: a differential flame graph (red grew, blue shrank) and "
                  "the tables");
  add_time_view_flags(sub, f->time, "Functions", false);
  sub->add_option("--fail-on-regression", f->fail_on_regression,
                  "Exit with status 3 when a step time, a function's or a kernel's time per step grew by more than PCT "
                  "percent and its interval lies above zero")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--threshold", f->thresholds,
                  "A threshold of one kind, KIND=PCT (step, iteration: of the base median; input_wait: of the base median "
                  "iteration; function: of the base median step; kernel: of the base kernel time per step); repeatable");
  commands.push_back(Command{sub, [f] { return run_diff(*f); }});
}

}  // namespace sprof::cli
