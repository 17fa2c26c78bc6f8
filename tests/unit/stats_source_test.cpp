#include <catch2/catch.hpp>

#include "sprof/stats_source.hpp"
#include "test_support.hpp"

using namespace sprof;
using namespace sprof::query;

TEST_CASE("an smdebug stats directory is answered from its stats files", "[query][source]") {
  auto dir = test::smdebug_fixtures() / "cprofile_python_stats";
  auto source = open_stats_source(dir, {});
  REQUIRE(source.ok());
  const StatsSource& s = **source;
  CHECK(s.kind() == SourceKind::stats);
  CHECK(s.what() == "cProfile stats files");
  CHECK(s.sampled() == nullptr);
  CHECK_FALSE(s.timer());
  REQUIRE_FALSE(s.index().records.empty());

  auto node = cprofile_records_of_node(s.index());
  REQUIRE(node.ok());
  auto all = s.aggregate(node->records);
  REQUIRE(all.ok());
  CHECK(all->used.size() == node->records.size());
  CHECK(all->total_calls > 0);

  // Phases over the same source add up to the whole: every record is in one training phase.
  auto phases = training_phases(node->records);
  auto by_phase = aggregate_phases(s, phases, PhaseGrouping::training_phase, Compat::sprof, {});
  REQUIRE(by_phase.ok());
  int64_t calls = 0;
  for (const auto& p : *by_phase) calls += p.aggregate.total_calls;
  CHECK(calls == all->total_calls);
  auto wanted = aggregate_phases(s, phases, PhaseGrouping::job_phase, Compat::sprof, {"training_loop"});
  REQUIRE(wanted.ok());
  REQUIRE(wanted->size() == 1);
  CHECK(wanted->front().name == "training_loop");

  // by-phase's whole question: the node resolved, and a phase it does not have named in the error.
  auto node_phases = aggregate_node_phases(s, kAnyNode, PhaseGrouping::training_phase, Compat::sprof, {}, "DIR");
  REQUIRE(node_phases.ok());
  CHECK(node_phases->node_id == node->node_id);
  REQUIRE(node_phases->phases.size() == by_phase->size());
  for (const PhaseAggregate& p : node_phases->phases) {
    REQUIRE(p.training != nullptr);
    CHECK(p.training >= node_phases->training.data());
    CHECK(p.training < node_phases->training.data() + node_phases->training.size());
    CHECK(p.training->name() == p.name);
  }
  auto missing = aggregate_node_phases(s, kAnyNode, PhaseGrouping::job_phase, Compat::sprof, {"no-such"}, "DIR");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::usage);
  CHECK_THAT(missing.error().message, Catch::Contains("--phase no-such: no such phase in DIR (node "));
}

TEST_CASE("source choices that cannot work are usage errors", "[query][source]") {
  auto dir = test::smdebug_fixtures() / "cprofile_python_stats";
  SourceOptions samples;
  samples.kind = SourceKind::samples;
  auto no_samples = open_stats_source(dir, samples);
  REQUIRE_FALSE(no_samples.ok());
  CHECK(no_samples.error().kind == ErrorKind::usage);
  CHECK_THAT(no_samples.error().message, Catch::Contains("not a sprof profile root"));

  SourceOptions timer;
  timer.timer = intervals::PythonTimer::cpu_time;
  auto timer_on_files = open_stats_source(dir, timer);
  REQUIRE_FALSE(timer_on_files.ok());
  CHECK(timer_on_files.error().kind == ErrorKind::usage);

  auto missing = open_stats_source(dir / "no-such-dir", {});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::bad_input);

  CHECK(parse_source_kind("samples") == SourceKind::samples);
  CHECK(parse_source_kind("stats") == SourceKind::stats);
  CHECK_FALSE(parse_source_kind("auto"));
}
