// Markers -> steps and the intervals that tile each process.

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sprof/markers.hpp"
#include "sprof/step_timeline.hpp"

using namespace sprof::store;
using namespace sprof::timeline;
using sprof::Mode;

namespace {

std::vector<Marker> markers(std::string_view text) {
  MarkerParser::Stats stats;
  auto out = parse_markers(text, &stats);
  REQUIRE(stats.skipped == 0);
  return out;
}

std::string label(const Boundary& b) {
  return fmt::format("{}-{}-{}-{}", to_string(b.mode), b.step ? std::to_string(*b.step) : "*",
                     to_string(b.phase), b.t_ns);
}

std::vector<std::string> labels(const ProcessTimeline& p) {
  std::vector<std::string> out;
  for (const Interval& i : p.intervals) {
    out.push_back(fmt::format("{} {}_{}", to_string(i.kind), label(i.start), label(i.end)));
  }
  return out;
}

}  // namespace

TEST_CASE("a training run: prestepzero, steps, gaps, a mode change, posthookclose", "[timeline]") {
  auto list = markers(
      "hello 100 7 7 1 1 start 3.11.2 /py\n"
      "mode 200 7 7 train\n"
      "sb 200 7 7 train 0 0\n"
      "ph 250 7 7 forwardpassend train 0 0\n"
      "se 300 7 7 train 0 0\n"
      "sb 400 7 7 train 1 1\n"
      "ph 410 7 7 forwardpassend train 1 1\n"
      "ph 420 7 7 forwardpassend train 1 1\n"
      "se 500 7 7 train 1 1\n"
      "mode 600 7 7 eval\n"
      "sb 600 7 7 eval 0 2\n"
      "se 650 7 7 eval 0 2\n"
      "close 700 7 7 exit\n");
  StepTimelineBuilder builder;
  builder.add(list);
  builder.set_process_exit(7, 900);
  StepTimeline timeline = builder.build();
  const ProcessTimeline* p = timeline.find(7);
  REQUIRE(p);
  CHECK(p->start_reason == "start");
  CHECK(p->start_ns == 100);
  CHECK(p->close_ns == 700);
  CHECK(p->end_ns == 900);
  REQUIRE(p->steps.size() == 3);
  CHECK(p->steps[1].forward_pass_end_ns == 410);  // the first one counts
  CHECK(p->steps[2].mode == Mode::eval);
  CHECK(p->steps[2].step == 0);
  CHECK(p->steps[2].global_step == 2);
  CHECK(labels(*p) == std::vector<std::string>{
                          "pre_step_zero prestepzero-*-start-100_train-0-stepstart-200",
                          "step train-0-stepstart-200_train-0-stepend-300",
                          "between_steps train-0-stepend-300_train-1-stepstart-400",
                          "step train-1-stepstart-400_train-1-stepend-500",
                          "between_modes train-1-stepend-500_eval-2-stepstart-600",
                          "step eval-2-stepstart-600_eval-2-stepend-650",
                          "post_hook_close eval-2-stepend-650_posthookclose-*-end-900",
                      });
  CHECK(p->intervals[1].forward_pass_end_ns == 250);
  CHECK_FALSE(p->intervals[2].forward_pass_end_ns);
  REQUIRE(p->mode_changes.size() == 2);
  CHECK(p->mode_changes[1].mode == Mode::eval);
  CHECK(p->problems.empty());
}

TEST_CASE("contiguous steps leave no gap; a step without its end is cut at the next", "[timeline]") {
  auto timeline = build_step_timeline(markers(
      "hello 0 3 3 1 1 start 3.9.18 /py\n"
      "sb 10 3 3 global 0 0\n"
      "se 20 3 3 global 0 0\n"
      "sb 20 3 3 global 1 1\n"
      "sb 30 3 3 global 2 2\n"
      "pause 35 3 3 pause\n"));
  const ProcessTimeline& p = timeline.processes.at(0);
  REQUIRE(p.steps.size() == 3);
  CHECK(p.steps[1].end_ns == 30);
  CHECK_FALSE(p.steps[1].ended_by_marker);
  // No hook close and no exit time: the last step and the open pause run to the last marker.
  CHECK(p.steps[2].end_ns == 35);
  CHECK_FALSE(p.steps[2].ended_by_marker);
  CHECK_FALSE(p.close_ns);
  REQUIRE(p.paused.size() == 1);
  CHECK(p.paused[0].begin_ns == 35);
  CHECK(p.paused[0].end_ns == 35);
  CHECK(labels(p) == std::vector<std::string>{
                         "pre_step_zero prestepzero-*-start-0_global-0-stepstart-10",
                         "step global-0-stepstart-10_global-0-stepend-20",
                         "step global-1-stepstart-20_global-1-stepend-30",
                         "step global-2-stepstart-30_global-2-stepend-35",
                         "post_hook_close global-2-stepend-35_posthookclose-*-end-35",
                     });
}

TEST_CASE("a process without steps is one interval", "[timeline]") {
  auto timeline = build_step_timeline(markers("hello 5 9 9 1 1 start 3.13.0 /py\nclose 50 9 9 exit\n"));
  CHECK(labels(timeline.processes.at(0)) ==
        std::vector<std::string>{"pre_step_zero prestepzero-*-start-5_posthookclose-*-end-50"});
}

TEST_CASE("hook close ends the open step; later steps and stray ends are ignored", "[timeline]") {
  auto timeline = build_step_timeline(markers(
      "hello 0 4 4 1 1 start 3.11.2 /py\n"
      "se 5 4 4 train 0 0\n"
      "sb 10 4 4 train 0 0\n"
      "se 12 4 4 train 5 5\n"
      "close 20 4 4 api\n"
      "sb 30 4 4 train 1 1\n"
      "se 40 4 4 train 1 1\n"));
  const ProcessTimeline& p = timeline.processes.at(0);
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].end_ns == 20);
  CHECK_FALSE(p.steps[0].ended_by_marker);
  CHECK(p.close_ns == 20);
  CHECK(p.end_ns == 40);
  CHECK(p.problems.size() == 3);  // end of step 0 not open, end of step 5, begin after close
}

TEST_CASE("pids are separated and arrival order does not matter", "[timeline]") {
  auto list = markers(
      "hello 0 1 1 1 1 start 3.11.2 /py\n"
      "dli 15 1 1 10 1 _MultiProcessingDataLoaderIter 2 0\n"
      "hello 16 2 2 1 1 fork 3.11.2 /py\n"
      "wstart 17 2 2 0 1\n"
      "dln 30 1 1 20 1 ok\n"
      "sb 31 1 1 train 0 0\n"
      "se 40 1 1 train 0 0\n"
      "dln 45 1 1 41 1 stop\n"
      "wstop 46 2 2 0 1\n"
      "ctr 47 1 1 m loss 2.5\n"
      "mark 48 1 1 m saved p\n"
      "fw 49 1 1 pytorch 1.13.0\n"
      "err 50 1 1 torch broken\n"
      "drop 51 1 1 3\n"
      "pause 52 1 1 stop\nresume 53 1 1 run\n"
      "close 60 1 1 exit\n");
  auto reference = build_step_timeline(list);
  std::mt19937 rng(7);
  std::shuffle(list.begin(), list.end(), rng);
  auto shuffled = build_step_timeline(list);
  REQUIRE(shuffled.processes.size() == 2);
  CHECK(labels(shuffled.processes[0]) == labels(reference.processes[0]));

  const ProcessTimeline& main = *shuffled.find(1);
  REQUIRE(main.dataloader_inits.size() == 1);
  CHECK(main.dataloader_inits[0].begin_ns == 10);
  CHECK(main.dataloader_inits[0].end_ns == 15);
  REQUIRE(main.dataloader_waits.size() == 2);
  CHECK(main.dataloader_waits[0].iterator_class == "_MultiProcessingDataLoaderIter");
  CHECK(main.dataloader_waits[1].outcome == DataLoaderOutcome::stop);
  CHECK(main.framework == "pytorch");
  CHECK(main.counters.at(0).value == 2.5);
  CHECK(main.instants.at(0).name == "saved");
  CHECK(main.errors.at(0).key == "torch");
  CHECK(main.dropped_markers == 3);
  REQUIRE(main.paused.size() == 1);
  CHECK(main.paused[0].end_ns == 53);

  const ProcessTimeline& worker = *shuffled.find(2);
  CHECK(worker.start_reason == "fork");
  CHECK(worker.parent_pid == 1);
  REQUIRE(worker.dataloader_worker);
  CHECK(worker.dataloader_worker->begin_ns == 17);
  CHECK(worker.dataloader_worker->end_ns == 46);
  CHECK_FALSE(shuffled.find(3));
}

TEST_CASE("a step stamped before its process's hello still starts after the process", "[timeline]") {
  // Found by fuzz_markers: the pre-step-zero interval ran from the hello (100) back to the step (0).
  auto timeline = build_step_timeline(markers(
      "hello 100 7 7 1 1 start 3.11.2 /py\n"
      "sb 0 7 7 eval 0 1\n"
      "se 50 7 7 eval 0 1\n"
      "close 200 7 7 exit\n"));
  const ProcessTimeline& p = timeline.processes.at(0);
  CHECK(p.start_ns == 0);
  for (const Interval& i : p.intervals) CHECK(i.start.t_ns <= i.end.t_ns);
}
