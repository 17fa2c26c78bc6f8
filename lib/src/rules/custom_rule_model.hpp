#pragma once
// What custom rules read (sprof/custom_rules.hpp): the steps and system ticks of a profile as
// records, with each step's function times from the samples, and the threshold rules'
// evaluation over them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/custom_rules.hpp"

namespace sprof::rules {

std::optional<CustomMetric> parse_metric(std::string_view name);
const char* metric_name(CustomMetric metric);
std::vector<std::string> metric_names();
bool is_system_metric(CustomMetric metric);
std::optional<Aggregation> parse_aggregation(std::string_view name);
const char* aggregation_name(Aggregation aggregation);
std::optional<Comparison> parse_comparison(std::string_view text);
const char* comparison_text(Comparison comparison);
// "mean step_time over 5 train steps > 0.5", for a rule without a description.
std::string describe(const ThresholdRule& rule);

struct FunctionTime {
  std::string name;  // co_qualname or co_name
  std::string file;
  int32_t line = 0;  // first line
  double self_s = 0;
  double total_s = 0;
};

struct StepRecord {
  std::string node;
  int64_t pid = 0;
  std::string mode;  // "train", "eval", "predict", "global"
  int64_t step = 0;
  int64_t start_us = 0;
  int64_t end_us = 0;
  bool sampled = false;    // the step's process has samples in this profile
  bool samples_pending = false;  // live: its process's samples up to the step's end are not written yet
  double sampled_s = 0;    // the weight of its samples (all threads)
  std::vector<FunctionTime> functions;  // by total time, longest first
  double duration_s() const { return double(end_us - start_us) / 1e6; }
};

struct SystemTick {
  std::string node;
  int64_t timestamp_us = 0;
  std::vector<const store::SystemMetric*> metrics;  // into RulesInput::system
};

struct RuleRecords {
  std::vector<StepRecord> steps;  // by end time
  std::vector<SystemTick> ticks;  // by time
  bool samples = false;           // the profile has Python samples
};

// Steps from the framework timeline's Step:ModeKeys.* events (a step still open, of no length, is
// left out); with `with_functions`, each step's function times from input.profile's samples
// of the step's process, and while a recording runs (`live`) whether those are all written yet.
RuleRecords collect_rule_records(const RulesInput& input, bool with_functions, bool live);

RuleResult evaluate_threshold(const ThresholdRule& rule, const RuleRecords& records);

// The JSON lines a rule program reads. `top`: how many of the step's functions go in.
nlohmann::ordered_json step_record_json(const StepRecord& step, size_t top);
nlohmann::ordered_json tick_record_json(const SystemTick& tick);

}  // namespace sprof::rules
