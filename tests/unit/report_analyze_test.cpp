// analyze's pieces on values small enough to work out by hand.

#include <catch2/catch.hpp>

#include "report/analyze_parts.hpp"

using namespace sprof;
using namespace sprof::report;

namespace {

StepRecord step(std::string mode, std::string number, int64_t start_us, int64_t end_us) {
  StepRecord s;
  s.node = "algo-1";
  s.mode = std::move(mode);
  s.step = std::move(number);
  s.start_us = start_us;
  s.end_us = end_us;
  return s;
}

store::TraceEvent trace(std::string name, int64_t start_us, int64_t end_us, std::string step_num) {
  store::TraceEvent e;
  e.name = name;
  e.lane = name;
  e.start_us = start_us;
  e.end_us = end_us;
  e.node_id = "algo-1-7";
  e.pid = 7;
  e.args.set("step_num", std::move(step_num));
  return e;
}

}  // namespace

TEST_CASE("steps are the Step:ModeKeys events, in start order", "[report][analyze]") {
  std::vector<store::TraceEvent> events = {trace("Step:ModeKeys.EVAL", 300, 400, "0"),
                                           trace("Forward", 0, 50, "0"),
                                           trace("Step:ModeKeys.TRAIN", 100, 200, "1")};
  auto steps = collect_steps(events);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].mode == "TRAIN");
  CHECK(steps[0].step == "1");
  CHECK(steps[0].pid == 7);
  CHECK(steps[1].mode == "EVAL");
}

TEST_CASE("step statistics and StepOutlier's outliers", "[report][analyze]") {
  // Nine steps of 1 s and one of 11 s: mean 2 s, population std 3 s; with stddev 2 the threshold is
  // 8 s (the slow step is an outlier), with stddev 3 it is 11 s (it is not: "greater than").
  std::vector<StepRecord> steps;
  for (int i = 0; i < 10; ++i) {
    int64_t start = i * 20000000LL;
    steps.push_back(step("TRAIN", std::to_string(i), start, start + (i == 4 ? 11000000 : 1000000)));
  }
  steps.push_back(step("EVAL", "0", 500000000, 500500000));
  auto stats = step_statistics(steps, 2.0);
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].mode == "TRAIN");
  CHECK(stats[0].count == 10);
  CHECK(stats[0].mean == Approx(2.0));
  CHECK(stats[0].outlier_threshold == Approx(8.0));
  CHECK(stats[0].p50 == 1.0);
  CHECK(stats[0].p95 == Approx(1.0 + 0.55 * 10.0));  // h = 9·0.95 = 8.55 between 1 s and 11 s
  CHECK(stats[0].max == 11.0);
  CHECK(stats[0].outlier_steps == std::vector<std::string>{"4"});
  CHECK(steps[4].outlier);
  CHECK(stats[1].count == 1);
  CHECK(stats[1].outlier_steps.empty());
  for (auto& s : steps) s.outlier = false;
  CHECK(step_statistics(steps, 3.0)[0].outlier_steps.empty());
}

TEST_CASE("job phases around the steps", "[report][analyze]") {
  std::vector<StepRecord> steps = {step("TRAIN", "0", 5000000, 6000000), step("TRAIN", "1", 6000000, 9000000)};
  auto phases = job_phases(steps, 0, 10000000);
  REQUIRE(phases.size() == 3);
  CHECK(phases[0].name == "initialization");
  CHECK(phases[0].end_us == 5000000);
  CHECK(phases[0].share == Approx(0.5));
  CHECK(phases[1].start_us == 5000000);
  CHECK(phases[1].end_us == 9000000);
  CHECK(phases[2].seconds() == Approx(1.0));
  CHECK(job_phases({}, 0, 10).empty());
}

TEST_CASE("system usage: per-core metrics averaged per tick", "[report][analyze]") {
  std::vector<store::SystemMetric> metrics;
  auto add = [&](std::string type, std::string name, std::string dim, double value, double ts) {
    metrics.push_back(store::SystemMetric{type, name, dim, value, "algo-1", ts});
  };
  add("cpu", "cpu0", "CPUUtilization", 10, 100.0);
  add("cpu", "cpu1", "CPUUtilization", 30, 100.0);
  add("memory", "MemoryUsedPercent", "", 50, 100.0);
  add("process", "ResidentMemoryBytes", "ProcessTree", 1000, 100.0);
  add("cpu", "cpu0", "CPUUtilization", 50, 100.5);
  add("cpu", "cpu1", "CPUUtilization", 70, 100.5);
  add("memory", "MemoryUsedPercent", "", 60, 100.5);
  std::vector<SystemCoverage> coverage;
  std::vector<SystemUsageRow> rows;
  summarize_system(metrics, coverage, rows);
  REQUIRE(coverage.size() == 1);
  CHECK(coverage[0].ticks == 2);
  CHECK(coverage[0].interval_s == Approx(0.5));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].metric == "CPUUtilization (mean of 2 cores)");
  CHECK(rows[0].unit == "%");
  CHECK(rows[0].min == 20);
  CHECK(rows[0].max == 60);
  CHECK(rows[0].mean == 40);
  CHECK(rows[1].metric == "MemoryUsedPercent");
  CHECK(rows[1].p50 == 55);
  CHECK(rows[2].metric == "process tree ResidentMemoryBytes");
  CHECK(rows[2].unit == "B");
  CHECK(rows[2].ticks == 1);
}
