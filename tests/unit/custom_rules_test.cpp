// Custom threshold rules on synthetic steps and system ticks, and rule files' checks.

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "sprof/custom_rules.hpp"
#include "sprof/rules.hpp"

using namespace sprof;
namespace fs = std::filesystem;

namespace {

// Train steps 0..n-1, back to back from epoch 1000 s, with the given durations (seconds).
std::vector<store::TraceEvent> steps(const std::vector<double>& durations, const std::string& mode = "TRAIN") {
  std::vector<store::TraceEvent> events;
  int64_t t = 1'000'000'000;
  for (size_t i = 0; i < durations.size(); ++i) {
    store::TraceEvent e;
    e.name = "Step:ModeKeys." + mode;
    e.node_id = "1-host";
    e.pid = 1;
    e.start_us = t;
    e.end_us = t + int64_t(durations[i] * 1e6);
    e.args.set("step_num", std::to_string(i));
    t = e.end_us;
    events.push_back(e);
  }
  return events;
}

store::SystemMetric gpu(double t, double value, const char* name = "gpu0") {
  store::SystemMetric m;
  m.type = "gpu";
  m.name = name;
  m.dimension = "GPUUtilization";
  m.value = value;
  m.node_id = "algo-1";
  m.timestamp = t;
  return m;
}

rules::ThresholdRule slow_steps() {
  rules::ThresholdRule r;
  r.name = "SlowSteps";
  r.metric = rules::CustomMetric::step_time;
  r.aggregation = rules::Aggregation::mean;
  r.window_steps = 3;
  r.mode = "train";
  r.comparison = rules::Comparison::greater;
  r.threshold = 0.5;
  r.message = "{window} averaged {value} s";
  return r;
}

rules::RuleResult run_one(const rules::RulesInput& input, const rules::ThresholdRule& rule) {
  rules::CustomRules custom;
  custom.thresholds.push_back(rule);
  rules::RulesOptions options;
  options.rules = {rule.name};
  options.custom = &custom;
  auto results = rules::run_rules(input, options);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 1);
  return results->front();
}

fs::path write_file(const std::string& name, const std::string& text) {
  fs::path dir = fs::temp_directory_path() / ("sprof-custom-rules-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

std::string rule_file_error(const std::string& text) {
  rules::CustomRules custom;
  auto status = rules::add_rule_file(write_file("rules.json", text), custom);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().kind == ErrorKind::usage);
  return status.error().message;
}

}  // namespace

TEST_CASE("custom rule: tumbling windows of steps, complete ones only", "[rules][custom]") {
  rules::RulesInput input;
  // Windows of 3: {0.1 0.1 0.1} {0.1 0.9 0.9} {0.9 0.9 0.9}; the last two steps fill no window.
  input.set_framework(steps({0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9, 0.9, 0.1, 0.1}));
  auto r = run_one(input, slow_steps());
  CHECK(r.status == rules::RuleStatus::issues_found);
  CHECK(r.datapoints == 3);
  CHECK(r.triggered == 2);
  CHECK(r.evidence.starts_with("train steps 6-8 averaged 0.9 s [mean step_time 0.9 > 0.5 over train steps 6-8"));
  CHECK(r.rule_parameters ==
        "metric:step_time\naggregation:mean\nwindow:3 steps\nmode:train\ncomparison:>\nthreshold:0.5");
  auto details = nlohmann::json::parse(r.details_json);
  CHECK(details["windows"] == 3);
  CHECK(details["triggered_windows"].size() == 2);

  // Eval steps do not count in a train window.
  rules::RulesInput eval;
  eval.set_framework(steps({0.9, 0.9, 0.9}, "EVAL"));
  auto none = run_one(eval, slow_steps());
  CHECK(none.status == rules::RuleStatus::no_data);
  CHECK(none.evidence == "no train steps in the framework timeline");

  rules::RulesInput few;
  few.set_framework(steps({0.9, 0.9}));
  CHECK(run_one(few, slow_steps()).evidence == "no complete window yet: 2 train steps, the window is 3");
}

TEST_CASE("custom rule: aggregations and comparisons", "[rules][custom]") {
  rules::RulesInput input;
  input.set_framework(steps({0.1, 0.2, 0.3, 0.4, 1.0}));
  auto rule = slow_steps();
  rule.window_steps = 5;
  rule.aggregation = rules::Aggregation::max;
  rule.threshold = 1.0;
  CHECK(run_one(input, rule).triggered == 0);  // max 1.0 is not > 1.0
  rule.comparison = rules::Comparison::greater_equal;
  CHECK(run_one(input, rule).triggered == 1);
  rule.aggregation = rules::Aggregation::p50;
  rule.comparison = rules::Comparison::less;
  rule.threshold = 0.31;
  CHECK(run_one(input, rule).triggered == 1);  // median 0.3
  rule.aggregation = rules::Aggregation::min;
  rule.comparison = rules::Comparison::less_equal;
  rule.threshold = 0.1;
  CHECK(run_one(input, rule).triggered == 1);
  // share: the time in steps over the window's wall time (steps back to back: 100 %).
  rule.aggregation = rules::Aggregation::share;
  rule.comparison = rules::Comparison::less;
  rule.threshold = 99.9;
  auto r = run_one(input, rule);
  CHECK(r.status == rules::RuleStatus::no_issues_found);
  CHECK(r.evidence == "share of time in steps met the threshold < 99.9 in none of 1 windows (nearest: 100)");
}

TEST_CASE("custom rule: a system metric over seconds, or over windows of steps", "[rules][custom]") {
  rules::RulesInput input;
  input.set_framework(steps({1, 1, 1, 1}));  // epoch 1000..1004 s
  // Two GPUs, every half second from 1000 s; busy only in the first two seconds.
  for (int i = 0; i < 10; ++i) {
    double t = 1000 + 0.5 * i;
    double busy = t < 1002 ? 90 : 5;
    input.system.push_back(gpu(t, busy, "gpu0"));
    input.system.push_back(gpu(t, busy / 2, "gpu1"));
  }
  rules::ThresholdRule idle;
  idle.name = "IdleGPU";
  idle.metric = rules::CustomMetric::gpu_utilization;
  idle.aggregation = rules::Aggregation::p95;
  idle.window_seconds = 1;
  idle.comparison = rules::Comparison::less;
  idle.threshold = 20;
  // Windows [1000,1001) [1001,1002) [1002,1003) [1003,1004); the data ends at 1004.5.
  auto r = run_one(input, idle);
  CHECK(r.datapoints == 4);
  CHECK(r.triggered == 2);
  // One device instead of the mean over both.
  idle.device = "gpu1";
  idle.threshold = 50;
  CHECK(run_one(input, idle).triggered == 4);  // gpu1 is at most 45
  // Windows of two steps: [1000,1002) busy, [1002,1004) idle.
  idle.device.clear();
  idle.threshold = 20;
  idle.window_seconds = 0;
  idle.window_steps = 2;
  r = run_one(input, idle);
  CHECK(r.datapoints == 2);
  CHECK(r.triggered == 1);
  CHECK(r.evidence.find("all steps 2-3") != std::string::npos);

  // With a mode, only the ticks during the group's steps: an eval step between two train steps
  // (1002..1003 s, GPUs idle) leaves the train window [1000,1002)+[1003,1004) busy.
  rules::RulesInput mixed;
  auto mixed_steps = steps({1, 1});
  auto eval = steps({1}, "EVAL");
  eval[0].start_us += 2'000'000;
  eval[0].end_us += 2'000'000;
  auto late = steps({1});
  late[0].start_us += 3'000'000;
  late[0].end_us += 3'000'000;
  late[0].args.set("step_num", std::string("2"));
  mixed_steps.push_back(eval[0]);
  mixed_steps.push_back(late[0]);
  mixed.set_framework(std::move(mixed_steps));
  for (int i = 0; i < 8; ++i) {
    double t = 1000 + 0.5 * i;
    mixed.system.push_back(gpu(t, t >= 1002 && t < 1003 ? 1 : 90));
  }
  idle.mode = "train";
  idle.window_steps = 3;
  idle.aggregation = rules::Aggregation::mean;
  idle.threshold = 80;
  r = run_one(mixed, idle);
  CHECK(r.datapoints == 1);
  CHECK(r.triggered == 0);  // mean 90: the eval step's idle ticks are not in it
  // Without a mode: train 0, train 1 and eval 0 are the first window, 1000..1003 s, idle tick
  // included: mean (4 x 90 + 2 x 1) / 6.
  idle.mode.clear();
  r = run_one(mixed, idle);
  CHECK(r.datapoints == 1);
  CHECK(r.triggered == 1);
  CHECK(r.evidence.find("mean GPUUtilization") == std::string::npos);
  CHECK(r.evidence.find("mean gpu_utilization 60.33 < 80") != std::string::npos);
  idle.aggregation = rules::Aggregation::p95;
  idle.threshold = 20;
  idle.window_steps = 2;

  rules::ThresholdRule memory = idle;
  memory.metric = rules::CustomMetric::memory_used;
  r = run_one(input, memory);
  CHECK(r.status == rules::RuleStatus::no_data);
  CHECK(r.evidence == "no MemoryUsedPercent records in the system metrics");
}

TEST_CASE("custom rule: a function's share needs sprof's samples", "[rules][custom]") {
  rules::RulesInput input;
  input.set_framework(steps({1, 1, 1}));
  rules::ThresholdRule rule = slow_steps();
  rule.metric = rules::CustomMetric::function;
  rule.function = "load_batch";
  rule.aggregation = rules::Aggregation::share;
  auto r = run_one(input, rule);
  CHECK(r.status == rules::RuleStatus::no_data);
  CHECK(r.evidence.starts_with("no Python samples in this profile"));
}

TEST_CASE("custom rules: names are checked against built-ins and each other", "[rules][custom]") {
  rules::CustomRules custom;
  custom.thresholds.push_back(slow_steps());
  rules::RulesOptions options;
  options.custom = &custom;
  options.rules = {"slowsteps", "StepOutlier"};
  CHECK(rules::check_rules(options).ok());
  options.rules = {"SlowStep"};
  auto bad = rules::check_rules(options);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("unknown rule 'SlowStep'") != std::string::npos);
  CHECK(bad.error().message.ends_with(", SlowSteps"));

  REQUIRE(rules::add_rule_program("/usr/local/bin/my-rule.py", custom).ok());
  CHECK(custom.find("MY-RULE") == "my-rule");
  REQUIRE(rules::add_rule_program("Other=python3 -u rule.py", custom).ok());
  CHECK(custom.programs.back().argv == std::vector<std::string>{"python3", "-u", "rule.py"});
  CHECK_FALSE(rules::add_rule_program("stepoutlier=x", custom).ok());
  CHECK_FALSE(rules::add_rule_program("slowsteps=x", custom).ok());
  auto catalog = custom.catalog();
  REQUIRE(catalog.size() == 3);
  CHECK(catalog[0].description == "mean step_time over 3 train steps > 0.5");
  CHECK(catalog[2].source == "--rule-program");
}

TEST_CASE("rule files: every mistake names the file, the rule and the key", "[rules][custom]") {
  rules::CustomRules custom;
  auto file = write_file("good.json", R"({"rules": [
      {"name": "A", "metric": "function", "function": "f", "time": "self", "aggregation": "share",
       "window": {"seconds": 10}, "comparison": ">=", "threshold": 20},
      {"name": "B", "program": ["python3", "good.json", "-x"], "recommendation": "r"}]})");
  REQUIRE(rules::add_rule_file(file, custom).ok());
  REQUIRE(custom.thresholds.size() == 1);
  CHECK(custom.thresholds[0].self_time);
  CHECK(custom.thresholds[0].window_seconds == 10);
  REQUIRE(custom.programs.size() == 1);
  // An argument naming a file beside the rule file is that file; others are kept.
  CHECK(custom.programs[0].argv ==
        std::vector<std::string>{"python3", (file.parent_path() / "good.json").string(), "-x"});

  CHECK(rule_file_error("[{\"name\": \"X\", \"metric\": \"step_tim\"}]").find("rule X: unknown metric \"step_tim\"") !=
        std::string::npos);
  CHECK(rule_file_error(R"([{"name": "X", "metric": "step_time", "aggregation": "mean", "windw": {}}])")
            .find("rule X: unknown key \"windw\"") != std::string::npos);
  CHECK(rule_file_error(R"([{"name": "X", "metric": "step_time", "aggregation": "avg"}])")
            .find("unknown aggregation \"avg\"") != std::string::npos);
  CHECK(rule_file_error(R"([{"name": "X", "metric": "cpu_utilization", "aggregation": "share",
                             "window": {"steps": 1}, "comparison": ">", "threshold": 1}])")
            .find("aggregation share applies to metrics function and step_time only") != std::string::npos);
  CHECK(rule_file_error(R"([{"name": "X", "metric": "step_time", "aggregation": "mean",
                             "window": {"steps": 1, "seconds": 2}, "comparison": ">", "threshold": 1}])")
            .find("exactly one of \"steps\" and \"seconds\"") != std::string::npos);
  CHECK(rule_file_error(R"([{"name": "X", "metric": "step_time", "aggregation": "mean",
                             "window": {"steps": 1}, "comparison": "=", "threshold": 1}])")
            .find("unknown comparison \"=\"") != std::string::npos);
  CHECK(rule_file_error(R"([{"name": "StepOutlier", "metric": "step_time", "aggregation": "mean",
                             "window": {"steps": 1}, "comparison": ">", "threshold": 1}])")
            .find("\"StepOutlier\" is the name of a built-in rule") != std::string::npos);
  std::string message = rule_file_error(R"([{"metric": "system", "aggregation": "mean",
                             "window": {"steps": 1}, "comparison": ">", "threshold": 1}])");
  CHECK(message.find("rules.json: rule #1: \"name\" is missing") != std::string::npos);
  CHECK(rule_file_error("{not json").find("not valid JSON") != std::string::npos);
  CHECK(rule_file_error("[]").find("it holds no rules") != std::string::npos);
  CHECK(rule_file_error(R"([{"name": "X", "metric": "step_time", "aggregation": "mean",
                             "window": {"seconds": 1e-7}, "comparison": ">", "threshold": 1}])")
            .find("window \"seconds\" must be a number from 0.001 to 10000000") != std::string::npos);
  rules::CustomRules none;
  auto missing = rules::add_rule_file("/nonexistent/rules.json", none);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "--rule-file /nonexistent/rules.json: cannot be read");
}
