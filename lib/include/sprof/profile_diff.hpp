#pragma once
// `sprof diff BASE NEW`: what changed between two runs (or two step ranges of one run), each change
// with how sure it is: step-time distributions, functions by time per step, GPU kernels by time
// per step, system metrics and rule verdicts. A CI gate fails only on a change beyond its threshold
// whose confidence interval excludes zero, so that noise does not fail a build.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sprof/diff_stats.hpp"
#include "sprof/modes.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/result.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::report {

struct DiffSideInput {
  std::filesystem::path path;              // a profile directory, or a Chrome trace (GPU views only)
  std::shared_ptr<const store::ProfileFiles> source;  // where path's files are; null: locally
  std::optional<int64_t> first_step;       // the mode's step numbers, inclusive; unset: all
  std::optional<int64_t> last_step;
};

struct DiffOptions {
  DiffSideInput base;
  DiffSideInput next;
  Mode mode = Mode::train;
  double confidence = 0.95;
  int resamples = 2000;  // bootstrap resamples of the step-time medians
  TimeView time_view;    // which samples the function times read (analyze's default: step threads' wall time)
};

// One side as read.
struct DiffSide {
  std::string path;
  bool trace_file = false;   // a Chrome trace: GPU views only
  size_t steps = 0;          // steps of the mode in the selection
  int64_t first_step = 0;
  int64_t last_step = 0;
  size_t partial_steps = 0;  // attach: steps the window cut, left out
  bool has_samples = false;
  double sampled_s_per_step = 0;  // the step threads' sampled time per step (the functions' whole)
  bool has_gpu = false;
};

// A distribution over steps: "step" (the step's duration), "iteration" (input wait + step, where
// the wait was measured), "input wait".
struct DistributionChange {
  std::string metric;
  size_t base_count = 0, new_count = 0;
  double base_median_s = 0, new_median_s = 0;
  double base_p90_s = 0, new_p90_s = 0;
  double change_s = 0;    // new median - base median
  double change_pct = 0;  // of the base median (0 when it is 0)
  ConfidenceInterval interval_s;  // bootstrap interval of change_s
  double p_value = 1;             // Mann–Whitney U
};

// A function's time per step, as the step threads' samples in the selected steps show it. A
// function is its (file, name) in both runs: line numbers move when code above it changes.
struct FunctionChange {
  std::string name;
  std::string file;
  int32_t line = 0;           // first line, as the newer side has it
  double base_self_s = 0;     // per step
  double new_self_s = 0;
  double base_total_s = 0;    // on the stack anywhere, per step
  double new_total_s = 0;
  double base_share = 0;      // self time / the step threads' sampled time
  double new_share = 0;
  double change_s = 0;        // new_self_s - base_self_s
  ConfidenceInterval interval_s;  // Welch's, over steps
  double change_pct_of_step = 0;  // change_s / the base's median step time
  double total_change_s = 0;        // new_total_s - base_total_s: the function and what it called
  ConfidenceInterval total_interval_s;
  std::string status;         // "new", "vanished", or "" (in both)
};

struct KernelChange {
  std::string name;
  double base_s = 0;  // kernel time per step
  double new_s = 0;
  double base_count = 0;  // launches per step
  double new_count = 0;
  double change_s = 0;
  ConfidenceInterval interval_s;  // Welch's, over steps
  double change_pct = 0;          // of the base's kernel time per step
  std::string status;             // "new", "vanished", or ""
};

struct GpuDiff {
  bool present = false;  // both sides hold GPU activity
  std::string note;      // why not, when not
  double base_kernel_s = 0, new_kernel_s = 0;  // all kernels' time per step
  double base_idle_share = 0, new_idle_share = 0;  // of the devices' spans in the steps
  double base_launch_delay_us = 0, new_launch_delay_us = 0;  // median, HTA's scope
  std::vector<KernelChange> kernels;  // by |change_s|, largest first
};

struct SystemMetricChange {
  std::string machine;
  std::string metric;
  std::string unit;
  double base_mean = 0, new_mean = 0;
};

struct RuleChange {
  std::string rule;
  std::string base_status;  // "IssuesFound", "NoIssuesFound", "NoData"; "" when the side lacks it
  std::string new_status;
};

// The step threads' stacks in the selected steps, both sides merged frame by frame from the root
// (a frame is "function (file)": lines move between versions), each frame's time per step on
// either side: the differential flame graph's data.
struct FlameDiffNode {
  std::string name;
  double base_s = 0;  // per step, at or under this frame
  double new_s = 0;
  std::vector<FlameDiffNode> children;  // by name
};

struct ProfileDiff {
  DiffSide base;
  DiffSide next;
  Mode mode = Mode::train;
  double confidence = 0.95;
  std::vector<DistributionChange> steps;
  std::string steps_note;      // why empty, when empty
  std::vector<FunctionChange> functions;  // by |change_s| (self), largest first
  std::string functions_note;
  std::string time_view;       // TimeView::describe()
  FlameDiffNode flame;         // root "all"; empty without samples on both sides
  GpuDiff gpu;
  std::vector<SystemMetricChange> system;  // metrics both sides have
  std::vector<RuleChange> rules;           // verdicts that differ
  std::vector<std::string> warnings;  // files either side's readers skipped ("BASE: ...", "NEW: ...")
};

// Reads both sides. A side that is neither a profile nor a trace, a step range without steps of
// the mode, or no steps of the mode on either side: bad_input naming the side.
Result<ProfileDiff> diff_profiles(const DiffOptions& options);

// --fail-on-regression: thresholds in percent, per kind of change (unset: not checked).
//   step, iteration: of the base's median; input_wait: the wait's growth, of the base's median iteration;
//   function: a function's time per step gained, of the base's median step time;
//   kernel: a kernel's time per step gained, of the base's kernel time per step.
struct RegressionThresholds {
  std::optional<double> step, iteration, input_wait, function, kernel;
};
struct Regression {
  std::string kind;    // "step", "iteration", "input_wait", "function", "kernel"
  std::string what;    // the metric, function or kernel
  double change_pct = 0;
  double threshold_pct = 0;
  ConfidenceInterval interval_s;
};
// The changes beyond their threshold whose interval lies wholly above zero.
std::vector<Regression> regressions(const ProfileDiff& diff, const RegressionThresholds& thresholds);

// --base-steps/--new-steps text onto `side`: FIRST-LAST, FIRST- or STEP; empty: every step.
Status parse_diff_steps(const std::string& flag, const std::string& text, DiffSideInput& side);
// --fail-on-regression PCT (`every` kind) and then --threshold KIND=PCT specs, which override it.
Result<RegressionThresholds> parse_thresholds(std::optional<double> every, const std::vector<std::string>& specs);

}  // namespace sprof::report
