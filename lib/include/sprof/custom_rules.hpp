#pragma once
// Rules users write themselves, run beside smdebug's built-ins by `sprof rules` (after the run)
// and `sprof record --rule...` (live), listed by `rules --list`:
//
//   - threshold rules, declared in a JSON rule file (`--rule-file FILE`): a metric sprof has
//     (step time, a function's share of the samples, a system or GPU metric) aggregated over
//     tumbling windows of N steps or S seconds and compared with a threshold; every complete
//     window that meets the comparison is one trigger;
//   - rule programs (`--rule-program [NAME=]COMMAND`, or a rule file entry with "program"): any
//     executable fed a stream of JSON lines on stdin (a start record, one record per step and
//     per system tick, then an `evaluate` record at each evaluation) that answers each evaluate
//     with its verdict as one JSON line. A program that crashes, hangs past the timeout or
//     writes garbage is reported once and disabled; nothing else stops.
// The record and verdict formats are in man/sprof.1 (CUSTOM RULES); sprof/rules.py is a helper.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/result.hpp"
#include "sprof/rules.hpp"
#include "sprof/temp_dir.hpp"

namespace sprof::rules {

enum class CustomMetric {
  step_time,               // seconds per step
  function,                // a function's share of a step's samples, percent
  cpu_utilization,         // CPUUtilization, mean over the cores (or one core: "device")
  io_wait,                 // I/OWaitPercentage, mean over the cores
  gpu_utilization,         // GPUUtilization, mean over the GPUs (or one: "device")
  gpu_memory_utilization,  // GPUMemoryUtilization
  memory_used,             // the host's MemoryUsedPercent
  system,                  // any system record: "dimension" (and "device": its Name)
};
enum class Aggregation { mean, min, max, p50, p95, share };
enum class Comparison { greater, greater_equal, less, less_equal };

struct ThresholdRule {
  std::string name;
  std::string description;
  std::string message;         // the evidence when it fires; {value} {threshold} {window} {node} are filled in
  std::string recommendation;
  CustomMetric metric = CustomMetric::step_time;
  std::string function;        // metric function: a name, a qualified name, or "FILE:NAME" (FILE a path suffix)
  bool self_time = false;      // metric function: own time only ("time": "self") instead of total
  std::string dimension;       // metric system
  std::string device;          // "cpu3", "gpu0": one device instead of the mean over all
  Aggregation aggregation = Aggregation::mean;
  int64_t window_steps = 0;    // one of these two
  double window_seconds = 0;
  std::string mode;            // "train", "eval", "predict", "global", or "" for any
  Comparison comparison = Comparison::greater;
  double threshold = 0;
  std::string source;          // the rule file
};

struct ProgramRule {
  std::string name;
  std::vector<std::string> argv;  // run as is (execvp)
  std::string description;
  std::string recommendation;
  std::string source;             // the rule file, or "--rule-program"
};

// A rule program's answer line to evaluation `seq` as its rule's result, or why it is not a
// verdict (the program is then disabled): JSON nested past 128 levels, not a JSON object with an
// integer "seq", another evaluation's, or a verdict without a valid "status" and fields.
Result<RuleResult> read_verdict(std::string_view line, const ProgramRule& rule, int64_t seq, int64_t steps_sent);

struct CustomRules {
  std::vector<ThresholdRule> thresholds;
  std::vector<ProgramRule> programs;
  double timeout_s = 30;         // --rule-timeout: per evaluation of a program
  std::vector<std::string> env;  // "KEY=VALUE" added to the programs' environment

  bool empty() const { return thresholds.empty() && programs.empty(); }
  // Every custom rule as `rules --list` shows it (source in RuleInfo::source).
  std::vector<RuleInfo> catalog() const;
  // The rule's name as declared, for a case-insensitive `name`, or nothing.
  std::optional<std::string> find(std::string_view name) const;
};

// Adds the rules of a JSON rule file: a list of objects, or {"rules": [...]}. An unknown key,
// metric, aggregation or comparison, a missing field or a name already taken is a usage error
// that names the file, the rule and the key.
Status add_rule_file(const std::filesystem::path& file, CustomRules& rules);
// `--rule-program [NAME=]COMMAND`: COMMAND is split on spaces; NAME defaults to the program's
// file name without its extension.
Status add_rule_program(std::string_view flag, CustomRules& rules);

// Where a command's custom rules come from: --rule-file, --rule-program, --rule-timeout.
struct CustomRuleSources {
  std::vector<std::string> files;
  std::vector<std::string> programs;
  double timeout_s = 30;
};

// The rules `sources` name, checked, with sprof's Python package (sprof/rules.py) written to a
// private directory on the programs' PYTHONPATH; the directory goes with the object.
class CustomRuleSet {
 public:
  static Result<std::unique_ptr<CustomRuleSet>> load(const CustomRuleSources& sources);
  ~CustomRuleSet();
  const CustomRules& rules() const { return rules_; }

 private:
  CustomRuleSet() = default;
  CustomRules rules_;
  TempDir package_dir_;  // sprof's Python package for rule programs
};

// Evaluates the selected custom rules, again and again as a recording grows. Threshold rules are
// recomputed over the whole input each time; each program keeps running between evaluations and
// is sent only the records it has not seen yet. Function shares are read from the samples of
// input.profile_dir when a selected rule needs them.
class CustomRuleRunner {
 public:
  // `selected`: the names to run (as find() returns them); empty means all.
  CustomRuleRunner(const CustomRules& rules, std::vector<std::string> selected, bool live);
  ~CustomRuleRunner();
  CustomRuleRunner(const CustomRuleRunner&) = delete;
  CustomRuleRunner& operator=(const CustomRuleRunner&) = delete;

  // `final`: the last evaluation; programs are told so and then closed.
  std::vector<RuleResult> evaluate(const RulesInput& input, bool final);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sprof::rules
