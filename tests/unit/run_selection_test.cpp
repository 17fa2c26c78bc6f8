// The flag texts commands hand to the library: steps, times, the selection of a run, rule names
// to --fail-on, and the nearest name to a typo.

#include <cmath>

#include <catch2/catch.hpp>

#include "sprof/closest_name.hpp"
#include "sprof/profile_diff.hpp"
#include "sprof/rules.hpp"
#include "sprof/run_selection.hpp"

using namespace sprof;

TEST_CASE("times are epoch microseconds unless a unit says otherwise", "[run_selection]") {
  CHECK(*query::parse_time_arg("--start-time", "1596585374960000") == 1596585374960000.0);
  CHECK(*query::parse_time_arg("--start-time", "15us") == 15.0);
  CHECK(*query::parse_time_arg("--start-time", "15ms") == 15000.0);
  CHECK(*query::parse_time_arg("--start-time", "1.5s") == 1500000.0);
  auto bad = query::parse_time_arg("--end-time", "soon");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::usage);
  CHECK(bad.error().message.find("--end-time: 'soon'") != std::string::npos);
  CHECK_FALSE(query::parse_time_arg("--end-time", "s").ok());  // a unit alone is no time
}

TEST_CASE("a star step is smdebug's open end", "[run_selection]") {
  CHECK(*query::parse_step_arg("--start-step", "*", false) == -1.0);
  CHECK(std::isinf(*query::parse_step_arg("--end-step", "*", true)));
  CHECK(*query::parse_step_arg("--end-step", "12", true) == 12.0);
  CHECK_FALSE(query::parse_step_arg("--end-step", "1.5", true).ok());
}

TEST_CASE("a run is selected by steps or by times, never both", "[run_selection]") {
  query::RunSelectionText text;
  auto none = query::parse_run_selection(text);
  REQUIRE(none.ok());
  CHECK_FALSE(none->steps);
  CHECK_FALSE(none->times);

  text.mode = "eval";
  text.start_step = "3";
  text.end_step = "*";
  auto steps = query::parse_run_selection(text);
  REQUIRE(steps.ok());
  REQUIRE(steps->steps);
  CHECK(steps->steps->mode == Mode::eval);
  CHECK(steps->steps->first == 3);
  CHECK_FALSE(steps->steps->last);  // '*': open

  text.start_time = "1s";
  CHECK(query::parse_run_selection(text).error().kind == ErrorKind::usage);

  query::RunSelectionText times;
  times.start_time = "2s";
  times.end_time = "1s";
  CHECK(query::parse_run_selection(times).error().message == "--end-time must be after --start-time");
}

TEST_CASE("fail-on names rules that ran, in any case", "[rules]") {
  std::vector<rules::RuleResult> results(2);
  results[0].rule = "StepOutlier";
  results[1].rule = "CPUBottleneck";
  results[1].status = rules::RuleStatus::issues_found;
  CHECK(*rules::parse_fail_on("", results) == std::vector<std::string>{});
  CHECK(*rules::parse_fail_on("ANY", results) == std::vector<std::string>{"StepOutlier", "CPUBottleneck"});
  auto named = rules::parse_fail_on("stepoutlier,", results);
  REQUIRE(named.ok());
  CHECK(*named == std::vector<std::string>{"StepOutlier"});
  CHECK(rules::first_failing(results, *named) == nullptr);
  CHECK(rules::first_failing(results, {"CPUBottleneck"}) == &results[1]);
  auto unknown = rules::parse_fail_on("Nope", results);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message == "--fail-on Nope: not one of the rules run (StepOutlier, CPUBottleneck), nor 'any'");
}

TEST_CASE("diff's step ranges and thresholds", "[diff]") {
  report::DiffSideInput side;
  REQUIRE(report::parse_diff_steps("--base-steps", "5-9", side).ok());
  CHECK(side.first_step == 5);
  CHECK(side.last_step == 9);
  report::DiffSideInput open;
  REQUIRE(report::parse_diff_steps("--new-steps", "5-", open).ok());
  CHECK_FALSE(open.last_step);
  CHECK_FALSE(report::parse_diff_steps("--new-steps", "9-5", open).ok());
  CHECK_FALSE(report::parse_diff_steps("--new-steps", "x", open).ok());

  auto t = report::parse_thresholds(10.0, {"kernel=2.5"});
  REQUIRE(t.ok());
  CHECK(t->step == 10.0);
  CHECK(t->kernel == 2.5);
  CHECK_FALSE(report::parse_thresholds(std::nullopt, {"kernel"}).ok());
  CHECK_FALSE(report::parse_thresholds(std::nullopt, {"gpu=1"}).ok());
}

TEST_CASE("the nearest name to a typo", "[closest_name]") {
  const std::vector<std::string> names{"record", "report", "rules", "analyze"};
  CHECK(closest_name("recrod", names) == "record");
  CHECK(closest_name("analyse", names) == "analyze");
  CHECK(closest_name("anal", names) == "analyze");  // a prefix
  CHECK(closest_name("frobnicate", names).empty());
}
