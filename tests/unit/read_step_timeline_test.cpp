// read_step_timeline: a profile directory's persisted markers back into the step timeline.

#include <catch2/catch.hpp>

#include "sprof/manifest.hpp"
#include "sprof/step_inference.hpp"
#include "sprof/step_timeline.hpp"
#include "test_support.hpp"

using namespace sprof::store;
using namespace sprof::timeline;
using sprof::Mode;
using sprof::test::TempDir;
using sprof::test::write_file;

namespace {

const char* kLog =
    "hello 1000 42 42 1 41 start 3.11.2 /usr/bin/python3\n"
    "fw 1500 42 42 pytorch 1.13.0a0\n"
    "mode 2000 42 42 train\n"
    "sb 2000 42 42 train 0 0\n"
    "ph 2500 42 42 forwardpassend train 0 0\n"
    "se 3000 42 42 train 0 0\n"
    "sb 3100 42 42 train 1 1\n"
    "se 4000 42 42 train 1 1\n"
    "hello 2200 43 43 1 42 fork 3.11.2 /usr/bin/python3\n"
    "wstart 2300 43 43 0 42\n";

void write_manifest_with_exits(const std::filesystem::path& dir, int64_t exit_42, int64_t exit_43) {
  sprof::store::Manifest m;
  m.state = "complete";
  m.mode = "launch";
  sprof::store::ManifestProcess p;
  p.pid = 42;
  p.detach_ns = exit_42;
  m.processes.push_back(p);
  p.pid = 43;
  p.detach_ns = exit_43;
  m.processes.push_back(p);
  REQUIRE(sprof::store::write_manifest(dir, m).ok());
}

}  // namespace

TEST_CASE("read_step_timeline reads markers.log and ends processes at their detach time", "[timeline][profile]") {
  TempDir tmp;
  write_file(tmp.path() / kMarkersLog, kLog);
  write_manifest_with_exits(tmp.path(), 9000, 5000);
  auto timeline = read_step_timeline(tmp.path());
  REQUIRE(timeline.ok());
  REQUIRE(timeline->processes.size() == 2);
  const ProcessTimeline* main = timeline->find(42);
  REQUIRE(main != nullptr);
  CHECK(main->framework == "pytorch");
  REQUIRE(main->steps.size() == 2);
  CHECK(main->steps[0].begin_ns == 2000);
  CHECK(main->steps[0].forward_pass_end_ns == 2500);
  CHECK(main->steps[1].end_ns == 4000);
  CHECK(main->end_ns == 9000);  // from the manifest, not the last marker
  REQUIRE(!main->intervals.empty());
  CHECK(main->intervals.back().kind == IntervalKind::post_hook_close);
  CHECK(main->intervals.back().end.t_ns == 9000);
  const ProcessTimeline* worker = timeline->find(43);
  REQUIRE(worker != nullptr);
  CHECK(worker->end_ns == 5000);
  REQUIRE(worker->dataloader_worker);
  CHECK(worker->dataloader_worker->parent_pid == 42);
}

TEST_CASE("read_step_timeline without a manifest ends processes at their last marker", "[timeline][profile]") {
  TempDir tmp;
  write_file(tmp.path() / kMarkersLog, kLog);
  auto timeline = read_step_timeline(tmp.path());
  REQUIRE(timeline.ok());
  CHECK(timeline->find(42)->end_ns == 4000);
}

TEST_CASE("read_step_timeline of a profile without markers is empty", "[timeline][profile]") {
  TempDir tmp;
  write_manifest_with_exits(tmp.path(), 9000, 5000);
  auto timeline = read_step_timeline(tmp.path());
  REQUIRE(timeline.ok());
  CHECK(timeline->processes.empty());
}

TEST_CASE("read_step_timeline skips bad lines and a cut last line", "[timeline][profile]") {
  TempDir tmp;
  write_file(tmp.path() / kMarkersLog,
             std::string("garbage line\nsb 10 7 7 train 0 0\nzz 11 7 7\nse 20 7 7 train 0 0\nsb 30 7 7 tr"));
  auto timeline = read_step_timeline(tmp.path());
  REQUIRE(timeline.ok());
  REQUIRE(timeline->processes.size() == 1);
  REQUIRE(timeline->processes[0].steps.size() == 1);
  CHECK(timeline->processes[0].steps[0].end_ns == 20);
}

TEST_CASE("read_step_timeline merges the steps --step-fn inferred", "[timeline][profile]") {
  TempDir tmp;
  write_file(tmp.path() / kMarkersLog, "hello 5 9 9 1 1 start 3.12.1 /usr/bin/python3\nmode 6 9 9 eval\n");
  write_file(tmp.path() / kStepFnLog, "sb 10 9 9 eval 0 0\nse 20 9 9 eval 0 0\nsb 30 9 9 eval 1 1\nse 40 9 9 eval 1 1\n");
  auto timeline = read_step_timeline(tmp.path());
  REQUIRE(timeline.ok());
  REQUIRE(timeline->processes.size() == 1);
  REQUIRE(timeline->processes[0].steps.size() == 2);
  CHECK(timeline->processes[0].steps[1].mode == Mode::eval);
  CHECK(timeline->processes[0].start_ns == 5);
}

TEST_CASE("read_step_timeline errors", "[timeline][profile]") {
  TempDir tmp;
  auto missing = read_step_timeline(tmp.path() / "nope");
  REQUIRE(!missing.ok());
  CHECK(missing.error().kind == sprof::ErrorKind::bad_input);
  CHECK(missing.error().message.find("nope") != std::string::npos);
  write_file(tmp.path() / "sprof.json", "{not json");
  write_file(tmp.path() / kMarkersLog, kLog);
  auto bad = read_step_timeline(tmp.path());
  REQUIRE(!bad.ok());
  CHECK(bad.error().message.find("sprof.json") != std::string::npos);
}

TEST_CASE("step-fn names match qualified and bare function names", "[timeline][step-fn]") {
  CHECK(step_function_matches("Trainer.train_step", "Trainer.train_step"));
  CHECK(step_function_matches("train_step", "Trainer.train_step"));       // 3.11+: a bare name finds the method
  CHECK(step_function_matches("Trainer.train_step", "train_step"));       // before 3.11: only co_name is known
  CHECK(step_function_matches("train", "train"));
  CHECK_FALSE(step_function_matches("train", "Trainer.train_step"));
  CHECK_FALSE(step_function_matches("step", "Trainer.train_step"));       // a suffix, not a component
  CHECK_FALSE(step_function_matches("Other.train_step", "Trainer.train_step"));
  CHECK_FALSE(step_function_matches("", "f"));
}
