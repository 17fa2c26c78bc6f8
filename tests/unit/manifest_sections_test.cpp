#include <catch2/catch.hpp>

#include "sprof/manifest_sections.hpp"

using namespace sprof::store;

TEST_CASE("manifest sections are written once and read back as written", "[manifest]") {
  Manifest m;
  SystemMetricsSection sys;
  sys.node_id = "algo-1";
  sys.interval_ms = 500;
  sys.ticks = 12;
  sys.gpus = 2;
  sys.thread_cpu_s = 0.25;
  sys.wall_s = 6.0;
  set_section(m, sys);
  OwnCostsSection costs;
  costs.parts = {{"system_monitor", 0.01, 0, 0}, {"markers", 0.002, 0.003, 0.05}};
  set_section(m, costs);
  IntervalStatsSection stats;
  stats.profiler = "pyinstrument";
  stats.timer = "cpu_time";
  stats.window = "steps 2..4";
  stats.intervals = 7;
  stats.directories = 3;
  stats.finished = false;
  set_section(m, stats);
  set_section(m, stats);  // replaces, never duplicates
  CHECK(m.extra.size() == 3);

  auto sys_back = system_metrics_section(m);
  REQUIRE(sys_back);
  CHECK(sys_back->node_id == "algo-1");
  CHECK(sys_back->interval_ms == 500);
  CHECK(sys_back->ticks == 12);
  CHECK(sys_back->gpus == 2);
  CHECK(sys_back->thread_cpu_s == 0.25);
  CHECK(sys_back->wall_s == 6.0);
  CHECK(sys_back->error.empty());

  auto costs_back = own_costs_section(m);
  REQUIRE(costs_back);
  REQUIRE(costs_back->parts.size() == 2);
  CHECK(costs_back->parts[0].name == "markers");  // name order
  CHECK(costs_back->parts[0].after_sampling_wall_s == 0.05);
  CHECK(costs_back->parts[1].name == "system_monitor");

  auto stats_back = interval_stats_section(m);
  REQUIRE(stats_back);
  CHECK(stats_back->timer == "cpu_time");
  CHECK(stats_back->window == "steps 2..4");
  CHECK(stats_back->intervals == 7);
  CHECK(stats_back->directories == 3);
  CHECK_FALSE(stats_back->finished);
}

TEST_CASE("manifest sections read leniently", "[manifest]") {
  Manifest m;
  CHECK_FALSE(system_metrics_section(m));
  CHECK_FALSE(own_costs_section(m));
  CHECK_FALSE(interval_stats_section(m));
  set_section(m, "system_metrics", "[1, 2]");  // not an object
  CHECK_FALSE(system_metrics_section(m));
  set_section(m, "system_metrics", R"({"interval_ms": "500", "wall_s": 2, "ticks": 1.5})");
  auto sys = system_metrics_section(m);
  REQUIRE(sys);
  CHECK_FALSE(sys->interval_ms);  // a string is not an interval
  CHECK_FALSE(sys->thread_cpu_s);
  CHECK(sys->wall_s == 2.0);
  CHECK(sys->ticks == 0);
  set_section(m, "own_costs", R"({"markers": 3, "sampler": {"while_sampling_cpu_s": "x"}})");
  auto costs = own_costs_section(m);
  REQUIRE(costs);
  REQUIRE(costs->parts.size() == 1);
  CHECK(costs->parts[0].name == "sampler");
  CHECK(costs->parts[0].while_sampling_cpu_s == 0);
  set_section(m, "interval_stats", "not json");
  CHECK_FALSE(interval_stats_section(m));
  CHECK(find_section(m, "interval_stats") != nullptr);
  CHECK(find_section(m, "steps") == nullptr);
}
