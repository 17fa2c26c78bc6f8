// write_step_trace: the step timeline as smdebug's model_timeline trace, read back with sprof's
// trace reader.

#include <catch2/catch.hpp>

#include <algorithm>

#include "sprof/manifest.hpp"
#include "sprof/step_trace.hpp"
#include "sprof/trace_events.hpp"
#include "test_support.hpp"

using namespace sprof::store;
using namespace sprof::timeline;
using sprof::test::TempDir;

TEST_CASE("write_step_trace writes steps, dataloader lanes and markers smdebug's reader reads", "[timeline][trace]") {
  // Markers in µs-round ns so the epoch conversion is exact.
  const char* log =
      "hello 1000000 42 42 1 41 start 3.11.2 /usr/bin/python3\n"
      "fw 1500000 42 42 pytorch 1.13.0a0\n"
      "dli 1900000 42 42 1800000 1 _MultiProcessingDataLoaderIter 2 0\n"
      "sb 2000000 42 42 train 0 0\n"
      "dln 2000000 42 42 1950000 1 ok\n"
      "ph 2500000 42 42 forwardpassend train 0 0\n"
      "se 3000000 42 42 train 0 0\n"
      "ctr 3100000 42 42 - loss 0.5\n"
      "mark 3200000 42 42 app checkpoint g\n"
      "sb 4000000 42 42 eval 0 1\n"
      "se 5000000 42 42 eval 0 1\n"
      "hello 1950000 43 43 1 42 fork 3.11.2 /usr/bin/python3\n"
      "wstart 1960000 43 43 0 42\n"
      "wstop 4500000 43 43 0 42\n";
  StepTimeline timeline = build_step_timeline(parse_markers(log));
  sprof::store::Manifest manifest;
  manifest.host = "my_host";
  manifest.clock_monotonic_ns = 1000000;
  manifest.clock_realtime_ns = 1700000000000000000;
  manifest.start_ns = 1000000;
  TempDir tmp;
  auto files = write_step_trace(tmp.path(), manifest, timeline);
  REQUIRE(files.ok());
  REQUIRE(files->size() == 1);  // the worker's lane goes with its parent
  CHECK(files->front().filename().string().ends_with("_42-my-host_model_timeline.json"));
  CHECK(files->front().parent_path().parent_path().filename() == "pevents");

  auto read = sprof::store::read_trace_events(tmp.path());
  REQUIRE(read.ok());
  CHECK(read->warnings.empty());
  const auto& events = read->events;
  auto find = [&](const std::string& name) {
    auto it = std::find_if(events.begin(), events.end(), [&](const auto& e) { return e.name == name; });
    REQUIRE(it != events.end());
    return *it;
  };
  const int64_t epoch0 = 1700000000000000;  // µs at monotonic 1 ms
  auto train = find("Step:ModeKeys.TRAIN");
  CHECK(train.lane == "Step:ModeKeys.TRAIN");
  CHECK(train.start_us == epoch0 + 1000);
  CHECK(train.end_us == epoch0 + 2000);
  CHECK(train.pid == 42);
  CHECK(train.args.text("step_num") == "0");
  auto eval = find("Step:ModeKeys.EVAL");
  CHECK(eval.args.text("step_num") == "0");  // the mode's own step, not the global one
  CHECK(eval.start_us == epoch0 + 3000);
  auto init = find("_MultiProcessingDataLoaderIter.__init__");
  CHECK(init.lane == "DataLoaderIterInitialize");
  CHECK(init.args.integer("num_workers") == 2);
  auto wait = find("_MultiProcessingDataLoaderIter::GetNext");
  CHECK(wait.lane == "DataLoaderIter");
  CHECK(wait.start_us == epoch0 + 950);
  CHECK(wait.end_us == epoch0 + 1000);
  auto worker = find("_worker_loop");
  CHECK(worker.lane == "DataLoaderWorker");
  CHECK(worker.pid == 43);
  CHECK(worker.args.integer("worker_id") == 0);
  CHECK(worker.end_us == epoch0 + 3500);
  // Instants (forwardpassend, counters, markers) are in the file but smdebug's reader skips them.
  CHECK(std::none_of(events.begin(), events.end(), [](const auto& e) { return e.name == "forwardpassend"; }));
  std::string text = sprof::test::read_file(files->front());
  CHECK(text.find("\"name\": \"forwardpassend\"") != std::string::npos);
  CHECK(text.find("\"name\": \"loss\"") != std::string::npos);
  CHECK(text.find("\"name\": \"checkpoint\"") != std::string::npos);
}

TEST_CASE("write_step_trace of a timeline without events writes nothing", "[timeline][trace]") {
  StepTimeline timeline = build_step_timeline(parse_markers("hello 1000 7 7 1 1 start 3.11.2 /usr/bin/python3\n"));
  sprof::store::Manifest manifest;
  TempDir tmp;
  auto files = write_step_trace(tmp.path(), manifest, timeline);
  REQUIRE(files.ok());
  CHECK(files->empty());
}
