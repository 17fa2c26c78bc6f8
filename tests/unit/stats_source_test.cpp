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

TEST_CASE("aggregate_each reads every selection in one pass and equals an aggregate of each",
          "[query][source]") {
  auto dir = test::smdebug_fixtures() / "cprofile_python_stats";
  auto source = open_stats_source(dir, {});
  REQUIRE(source.ok());
  auto node = cprofile_records_of_node((*source)->index());
  REQUIRE(node.ok());
  const Selection& records = node->records;
  REQUIRE(records.size() >= 2);
  StatsRecord missing = *records[1];
  missing.path = records[1]->path.parent_path() / "no-such-python_stats";

  // The fixture's files, repeated so that several threads read: an unreadable file in the
  // first selection, an empty one, files that come back in several.
  std::vector<Selection> selections(4);
  for (size_t i = 0; i < 20; ++i) selections[0].push_back(records[i % records.size()]);
  selections[0].insert(selections[0].begin() + 1, &missing);
  for (size_t i = 0; i < 17; ++i) selections[2].push_back(records[(i + 1) % records.size()]);
  selections[3] = {records[0]};

  for (unsigned threads : {1u, 2u, 3u}) {
    AggregateOptions options;
    options.threads = threads;
    auto each = aggregate_each(selections, options);
    REQUIRE(each.ok());
    REQUIRE(each->size() == selections.size());
    for (size_t i = 0; i < selections.size(); ++i) {
      auto alone = aggregate(selections[i], options);
      REQUIRE(alone.ok());
      const Aggregate& a = (*each)[i];
      CHECK(sprof::store::identical(a.table, alone->table));
      CHECK(a.total_calls == alone->total_calls);
      CHECK(a.primitive_calls == alone->primitive_calls);
      CHECK(a.total_tt == alone->total_tt);
      CHECK(a.wall_seconds == alone->wall_seconds);
      CHECK(a.used == alone->used);
      REQUIRE(a.unreadable.size() == (i == 0 ? 1u : 0u));
    }
    CHECK((*each)[0].unreadable.front().path == missing.path);
    CHECK((*each)[0].used.size() == 20);
    CHECK((*each)[1].table.empty());
  }

  // --strict: the unreadable file ends the pass.
  AggregateOptions strict;
  strict.strict = true;
  auto failed = aggregate_each(selections, strict);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().kind == ErrorKind::bad_input);
  CHECK_THAT(failed.error().message, Catch::Contains("no-such-python_stats") && Catch::Contains("--strict"));

  // The source's: a selection none of whose files can be read is an error, as aggregate() says.
  auto none = (*source)->aggregate_each({selections[2], {&missing}});
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Contains("none of the 1 selected stats files could be read"));
  auto fine = (*source)->aggregate_each({selections[2], selections[3]});
  REQUIRE(fine.ok());
  CHECK(fine->at(1).used.size() == 1);
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
