#pragma once
// The evaluation model every rule shares: a rule is a stateful object fed consecutive windows of
// scan_interval_us; state accumulates across windows and the rule evaluates at the end of each
// window, exactly as smdebug's invoke_for_timerange does.
//
// smdebug's rule code, which each rule file cites by path, is smdebug/profiler/analysis/rules/*.py
// in awslabs/sagemaker-debugger at commit 2222c547a94623e2e3288a196e598f066eaee48d (Nov 2020), the
// parent of 225e39b9, which removed it from the public tree: read it with
// `git show 2222c547:smdebug/profiler/analysis/rules/<rule>.py`. Parameter checks follow
// smdebug_rulesconfig/profiler_rules/rules.py in awslabs/sagemaker-debugger-rulesconfig.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/iterations.hpp"
#include "sprof/manifest_sections.hpp"
#include "sprof/rules.hpp"

namespace sprof::rules {

using Json = nlohmann::ordered_json;

// sprof's offline windows: half-open [start, end); each system sample in the window holding its
// Timestamp, each framework event in the window holding its start. Events keep time order.
struct Window {
  int64_t start_us = 0;
  int64_t end_us = 0;
  std::vector<const store::SystemMetric*> system;
  std::vector<const store::TraceEvent*> framework;
};

struct RuleContext {
  const RulesInput* input = nullptr;
  bool compat = false;             // --compat smdebug
  int64_t first_timestamp_us = 0;  // start of the first window (smdebug's first_timestamp)
  // The training loop's iterations (sprof/iterations.hpp), worked out once for all rules.
  const std::optional<IterationStats>* training_loop = nullptr;
};

// A validated parameter value, printed as Python's str() prints it in RuleParameters.
struct ParamValue {
  bool none = false;       // mode=None
  bool integral = true;    // printed without a decimal point ("50" vs "50.0")
  double number = 0.0;
  std::string text;        // for mode
  std::string str() const;
};

class Params {
 public:
  void set(const std::string& name, ParamValue value);
  const ParamValue& get(const std::string& name) const;
  double number(const std::string& name) const { return get(name).number; }
  int64_t integer(const std::string& name) const { return static_cast<int64_t>(get(name).number); }
  std::string str(const std::string& name) const { return get(name).str(); }

 private:
  std::vector<std::pair<std::string, ParamValue>> values_;
};

// Parses a value for a parameter of `kind`, with smdebug's validation; the error names rule and parameter.
Result<ParamValue> parse_param_value(const std::string& rule, const ParamInfo& info, const std::string& text);
// The defaults of a rule's parameters.
Params default_params(const RuleInfo& info);

class Rule {
 public:
  virtual ~Rule() = default;
  virtual void on_window(const Window& window) = 0;
  // After the last window: work whose result only the final report shows.
  virtual void finish() {}
  virtual std::string rule_parameters() const = 0;
  // One line saying what was found (or that nothing was).
  virtual std::string evidence() const = 0;
  // Why the input, though present, holds nothing the rule can judge (its status is then NoData
  // with this as evidence); none by default.
  virtual std::optional<std::string> nothing_to_judge() const { return std::nullopt; }

  int64_t triggered() const { return triggered_; }
  int64_t violations() const { return violations_; }
  int64_t datapoints() const { return datapoints_; }
  const Json& details() const { return details_; }
  void set_system_hosts(const std::map<std::string, std::string>* hosts) { system_hosts_ = hosts; }

 protected:
  // A system-metrics node id as its machine's host ("algo-1" -> "vm"), for evidence; itself
  // when no sprof.json names it.
  std::string machine(const std::string& node) const {
    return system_hosts_ == nullptr ? node : store::system_node_host(*system_hosts_, node);
  }
  const std::map<std::string, std::string>* system_hosts_ = nullptr;
  int64_t triggered_ = 0;
  int64_t violations_ = 0;
  int64_t datapoints_ = 0;
  Json details_ = Json::object();
};

struct RuleDef {
  RuleInfo info;
  std::function<std::unique_ptr<Rule>(const Params&, const RuleContext&)> make;
  // Why the input lacks what the rule reads (status NoData), or nothing.
  std::function<std::optional<std::string>(const RulesInput&)> missing_input;
  bool sprof_only = false;  // not one of smdebug's: left out of ProfilerReport under --compat smdebug
};

// smdebug's eleven sub-rules in ProfilerReport's order, then sprof's own (registry.cpp: the one list).
const std::vector<RuleDef>& rule_definitions();

// Helpers shared by rules.
bool has_dimension(const RulesInput& input, std::string_view dimension);
bool has_step_events(const RulesInput& input);
std::string format_number(double value);        // "12.5", "3"
std::string python_float_text(double value);    // Python's repr of a float

struct BoxStats;
// The box plot the GPU rules report, appended to `entry` in smdebug's key order: p25, p50, p75,
// p95 and the whiskers (upper, lower) at 1.5 IQR, clipped to max and min. The IQR's lower
// quartile is passed in: BatchSize under --compat smdebug takes another series' (its bug).
void append_box(Json& entry, const BoxStats& box, double iqr_p25);

}  // namespace sprof::rules
