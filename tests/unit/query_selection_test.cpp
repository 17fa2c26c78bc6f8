#include <limits>

#include <catch2/catch.hpp>

#include "sprof/pstats.hpp"
#include "sprof/query.hpp"
#include "test_support.hpp"

using namespace sprof::query;
using sprof::Phase;
using sprof::store::parse_stats_dir_name;

namespace {

StatsDirName name(const char* text) {
  auto parsed = parse_stats_dir_name(text);
  REQUIRE(parsed.ok());
  return *parsed;
}

StatsRecord record(const char* dir, const char* node = "0-algo-1") {
  StatsRecord r;
  r.profiler = "cprofile";
  r.node_id = node;
  r.dir_name = dir;
  r.name = name(dir);
  r.path = dir;
  return r;
}

}  // namespace

TEST_CASE("in_step_interval follows smdebug's rules", "[query]") {
  const double inf = std::numeric_limits<double>::infinity();
  auto within = name("train-1-stepstart-1_train-1-stepend-2");
  auto between = name("train-1-stepend-1_train-2-stepstart-2");
  auto pre = name("prestepzero-*-start-1_train-0-stepstart-2");
  auto post = name("train-4-stepend-1_posthookclose-*-end-2");
  using P = Phase;
  // Strictly inside.
  CHECK(in_step_interval(within, 0, 2, P::stepstart, P::stepend));
  // Equal boundaries with the default phases.
  CHECK(in_step_interval(within, 1, 1, P::stepstart, P::stepend));
  CHECK_FALSE(in_step_interval(between, 1, 1, P::stepstart, P::stepend));
  // A requested start phase of stepend keeps only stats that start at stepend.
  CHECK_FALSE(in_step_interval(within, 1, 2, P::stepend, P::stepstart));
  CHECK(in_step_interval(between, 1, 2, P::stepend, P::stepstart));
  // A requested end phase of stepstart keeps only stats that end at stepstart.
  CHECK_FALSE(in_step_interval(within, 0, 1, P::stepstart, P::stepstart));
  // `*` steps are -1 and +inf.
  CHECK(in_step_interval(pre, -1, 0, P::start, P::stepstart));
  CHECK_FALSE(in_step_interval(pre, 0, 5, P::stepstart, P::stepend));
  CHECK(in_step_interval(post, 0, inf, P::stepstart, P::stepend));
  CHECK_FALSE(in_step_interval(post, 0, 100, P::stepstart, P::stepend));
}

TEST_CASE("in_time_interval counts a start or an end inside", "[query]") {
  auto n = name("train-1-stepstart-10_train-1-stepend-20");
  CHECK(in_time_interval(n, 5, 10));
  CHECK(in_time_interval(n, 20, 30));
  CHECK(in_time_interval(n, 12, 25));
  CHECK_FALSE(in_time_interval(n, 12, 18));  // strictly inside is no overlap for smdebug
  CHECK_FALSE(in_time_interval(n, 21, 30));
}

TEST_CASE("node any is the node of the earliest cProfile stats", "[query]") {
  sprof::store::ProfileIndex index;
  index.records.push_back(record("train-1-stepstart-5_train-1-stepend-6", "9-algo-9"));
  index.records.back().profiler = "pyinstrument";
  index.records.push_back(record("train-1-stepstart-10_train-1-stepend-20", "1-algo-2"));
  index.records.push_back(record("train-1-stepstart-11_train-1-stepend-21", "0-algo-1"));
  auto any = cprofile_records_of_node(index);
  REQUIRE(any.ok());
  CHECK(any->node_id == "1-algo-2");
  CHECK(any->records.size() == 1);
  auto unknown = cprofile_records_of_node(index, "5-algo-5");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message.find("0-algo-1, 1-algo-2") != std::string::npos);
}

TEST_CASE("training and job phases group mode pairs in smdebug's order", "[query]") {
  std::vector<StatsRecord> records = {
      record("prestepzero-*-start-1_train-0-stepstart-2"),
      record("train-0-stepstart-3_train-0-stepend-4"),
      record("train-0-stepend-5_eval-0-stepstart-6"),
      record("eval-0-stepstart-7_eval-0-stepend-8"),
      record("eval-0-stepend-9_posthookclose-*-end-10"),
      record("train-5-stepend-11_posthookclose-*-end-12"),
  };
  Selection all;
  for (const auto& r : records) all.push_back(&r);
  auto phases = training_phases(all);
  std::vector<std::string> names;
  for (const auto& p : phases) names.push_back(p.name());
  CHECK(names == std::vector<std::string>{"train-train", "train-eval", "train-posthookclose",
                                          "eval-eval", "eval-posthookclose",
                                          "prestepzero-train"});
  auto jobs = job_phases(phases);
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[0].phase == JobPhase::initialization);
  CHECK(jobs[1].phase == JobPhase::training_loop);
  CHECK(jobs[1].parts.size() == 3);
  CHECK(jobs[2].phase == JobPhase::finalization);
  CHECK(jobs[2].parts.size() == 2);
  auto smdebug = job_phases(phases, Compat::smdebug);
  REQUIRE(smdebug.size() == 3);
  REQUIRE(smdebug[2].parts.size() == 1);
  CHECK(smdebug[2].parts[0].name() == "eval-posthookclose");
  // training_loop is always there, even with nothing in it.
  auto only_pre = job_phases(training_phases({all[0]}));
  REQUIRE(only_pre.size() == 2);
  CHECK(only_pre[1].parts.empty());
}

TEST_CASE("an aggregate is written as a pstats file; nothing selected writes none", "[query]") {
  sprof::test::TempDir dir;
  const std::filesystem::path file = dir.path() / "selected.pstats";
  Aggregate empty;
  auto refused = write_aggregate_pstats(file, empty);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == sprof::ErrorKind::bad_input);
  CHECK(refused.error().message.find(file.string()) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(file));

  Aggregate one;
  sprof::store::FunctionStats& stats = one.table[sprof::store::FunctionKey{"train.py", 12, "step"}];
  stats.nc = stats.cc = 3;
  stats.tt = 0.25;
  stats.ct = 0.5;
  REQUIRE(write_aggregate_pstats(file, one).ok());
  auto back = sprof::store::read_pstats(file);
  REQUIRE(back.ok());
  const sprof::store::FunctionStats* read = back->find(sprof::store::FunctionKey{"train.py", 12, "step"});
  REQUIRE(read != nullptr);
  CHECK(read->nc == 3);
  CHECK(read->ct == 0.5);
}
