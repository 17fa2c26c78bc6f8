// Training-loop iterations from a framework timeline: each step's input wait and its DataLoader part.

#include <catch2/catch.hpp>

#include "sprof/iterations.hpp"

using namespace sprof;

namespace {

store::TraceEvent event(const std::string& lane, const std::string& name, int64_t start_us, int64_t end_us,
                        int64_t pid, const std::string& node = "1-host") {
  store::TraceEvent e;
  e.lane = lane;
  e.name = name;
  e.start_us = start_us;
  e.end_us = end_us;
  e.pid = pid;
  e.node_id = node;
  return e;
}

store::TraceEvent step(const std::string& mode, int step_num, int64_t start_us, int64_t end_us, int64_t pid = 1,
                       const std::string& node = "1-host") {
  auto e = event("Step:ModeKeys." + mode, "Step:ModeKeys." + mode, start_us, end_us, pid, node);
  e.args.set("step_num", std::to_string(step_num));
  return e;
}

}  // namespace

TEST_CASE("iterations: the wait before each step, from the previous step's end", "[iterations]") {
  // Iterator created at 0..100; fetches 100..900, 1000..1900; steps 900..1000, 1900..2000, 2500..2600.
  std::vector<store::TraceEvent> events = {
      event("DataLoaderIterInitialize", "_MultiProcessingDataLoaderIter.__init__", 0, 100, 1),
      event("DataLoaderIter", "_MultiProcessingDataLoaderIter::GetNext", 100, 900, 1),
      step("TRAIN", 0, 900, 1000),
      event("DataLoaderIter", "_MultiProcessingDataLoaderIter::GetNext", 1000, 1900, 1),
      step("TRAIN", 1, 1900, 2000),
      step("TRAIN", 2, 2500, 2600),
      // Another process's fetch covers nothing of process 1's waits.
      event("DataLoaderIter", "_MultiProcessingDataLoaderIter::GetNext", 2000, 2500, 2),
  };
  auto spans = rules::step_spans(events);
  REQUIRE(spans.size() == 3);
  CHECK(spans[1].mode == "TRAIN");
  CHECK(spans[1].step == "1");
  auto its = rules::iterations(spans, events);
  REQUIRE(its.size() == 3);
  // The first step waits from the iterator's creation.
  CHECK(its[0].measured);
  CHECK(its[0].wait_start_us == 0);
  CHECK(its[0].dataloader_us == 900);
  CHECK(its[1].wait_start_us == 1000);
  CHECK(its[1].dataloader_us == 900);
  CHECK(its[2].wait_start_us == 2000);
  CHECK(its[2].dataloader_us == 0);

  auto stats = rules::iteration_stats(its);
  REQUIRE(stats.size() == 1);
  const auto& s = stats[0];
  CHECK(s.iterations == 3);
  CHECK(s.processes == 1);
  CHECK(s.wait_s == Approx((900 + 900 + 500) / 1e6));
  CHECK(s.step_s == Approx(300 / 1e6));
  CHECK(s.dataloader_s == Approx(1800 / 1e6));
  CHECK(s.wait_share() == Approx(2300.0 / 2600));
  CHECK(s.wait.p50 == Approx(900 / 1e6));
  CHECK(std::string(rules::input_bound_class(s.wait_share())) == "highly input-bound");
  auto headline = rules::loop_headline(s);
  CHECK(headline == "training loop (TRAIN, 3 iterations): 88.5% waiting for input (DataLoader 69.2%), 11.5% in steps: "
                    "highly input-bound");
}

TEST_CASE("iterations: per process, across modes, first steps without a loader unmeasured", "[iterations]") {
  std::vector<store::TraceEvent> events = {
      step("TRAIN", 0, 100, 200, 1), step("TRAIN", 0, 150, 250, 2, "2-host"),
      step("TRAIN", 1, 300, 400, 1), step("TRAIN", 1, 260, 350, 2, "2-host"),
      step("EVAL", 0, 450, 470, 1),  // waits from TRAIN step 1's end
  };
  auto its = rules::iterations(rules::step_spans(events), events);
  REQUIRE(its.size() == 5);
  // Ordered by start: TRAIN 0 (pid 1), TRAIN 0 (pid 2), TRAIN 1 (pid 2), TRAIN 1 (pid 1), EVAL 0.
  CHECK_FALSE(its[0].measured);
  CHECK_FALSE(its[1].measured);
  CHECK(its[2].step.pid == 2);
  CHECK(its[2].wait_start_us == 250);
  CHECK(its[3].wait_start_us == 200);
  CHECK(its[4].step.mode == "EVAL");
  CHECK(its[4].wait_start_us == 400);
  auto stats = rules::iteration_stats(its);
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].mode == "TRAIN");
  CHECK(stats[0].iterations == 2);
  CHECK(stats[0].processes == 2);
  CHECK(stats[1].mode == "EVAL");
  auto loop = rules::training_loop(its);
  REQUIRE(loop);
  CHECK(loop->mode == "TRAIN");
  CHECK(rules::loop_headline(*loop, "load_batch").find("(in load_batch)") != std::string::npos);
  // Overlapping steps of one process wait nothing.
  std::vector<store::TraceEvent> overlapping = {step("TRAIN", 0, 100, 300), step("TRAIN", 1, 200, 400)};
  auto o = rules::iterations(rules::step_spans(overlapping), overlapping);
  CHECK(o[1].measured);
  CHECK(o[1].wait_s() == 0);
  CHECK_FALSE(rules::training_loop(rules::iterations({}, {})));
}
