// The per-step trace schedule (torch.profiler's schedule function), Composer's name templates
// and the tracker that turns markers into closed windows.

#include <catch2/catch.hpp>

#include "sprof/trace_windows.hpp"

using namespace sprof;
using namespace sprof::traces;

namespace {

// torch.profiler.schedule's function, transcribed from torch/profiler/profiler.py, as the oracle.
ScheduleAction torch_schedule(int64_t wait, int64_t warmup, int64_t active, int64_t repeat, int64_t skip_first,
                              int64_t step) {
  if (step < skip_first) return ScheduleAction::none;
  step -= skip_first;
  int64_t num_steps = wait + warmup + active;
  if (repeat > 0 && step / num_steps >= repeat) return ScheduleAction::none;
  int64_t mod_step = step % num_steps;
  if (mod_step < wait) return ScheduleAction::none;
  if (mod_step < wait + warmup) return ScheduleAction::warmup;
  return mod_step < num_steps - 1 ? ScheduleAction::record : ScheduleAction::record_and_save;
}

store::Marker marker(int64_t t, store::MarkerData data, int32_t pid = 10) {
  return store::Marker{t, pid, pid, std::move(data)};
}

}  // namespace

TEST_CASE("trace schedule: parsed words, Composer's defaults, torch.profiler's actions") {
  auto s = parse_trace_schedule("active=3,wait=2,skip_first=1,repeat=0,warmup=0");
  REQUIRE(s.ok());
  CHECK(s->active == 3);
  CHECK(s->wait == 2);
  CHECK(s->skip_first == 1);
  CHECK(s->repeat == 0);
  CHECK(s->warmup == 0);
  auto d = parse_trace_schedule("active=4");
  REQUIRE(d.ok());
  CHECK((d->wait == 0 && d->warmup == 1 && d->repeat == 1 && d->skip_first == 0));
  // The last two wrapped the cycle to 0 (a SIGFPE in record; issue 29, defect 4).
  for (const char* bad : {"", "active", "active=", "active=x", "active=0", "wait=-1", "sleep=1", "active=1,,wait=1",
                          "wait=9223372036854775807,warmup=9223372036854775807,active=2", "active=1000000000001"}) {
    auto r = parse_trace_schedule(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::usage);
  }
  for (int64_t wait : {0, 1, 3})
    for (int64_t warmup : {0, 2})
      for (int64_t active : {1, 2, 5})
        for (int64_t repeat : {0, 1, 3})
          for (int64_t skip : {0, 4}) {
            TraceSchedule sc{skip, wait, warmup, active, repeat};
            for (int64_t step = 0; step < 60; ++step) {
              INFO(wait << " " << warmup << " " << active << " " << repeat << " " << skip << " step " << step);
              CHECK(schedule_action(sc, step) == torch_schedule(wait, warmup, active, repeat, skip, step));
            }
          }
}

TEST_CASE("trace names: Python format syntax over Composer's variables") {
  auto t = NameTemplate::parse("{run_name}/rank{rank}.{batch:06d}.{{x}}.{mode:>6}.json", "--trace-filename");
  REQUIRE(t.ok());
  TraceVariables v;
  v.run_name = "exp";
  v.rank = 3;
  v.batch = 42;
  v.mode = "train";
  CHECK(t->expand(v) == "exp/rank3.000042.{x}. train.json");
  auto unknown = NameTemplate::parse("rank{rnk}.json", "--trace-filename");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().kind == ErrorKind::usage);
  CHECK(unknown.error().message.find("unknown variable {rnk}") != std::string::npos);
  CHECK(unknown.error().message.find("--trace-filename") != std::string::npos);
  for (const char* bad : {"{batch", "batch}", "{mode:d}", "{batch:zz}"}) {
    INFO(bad);
    CHECK_FALSE(NameTemplate::parse(bad, "--trace-folder").ok());
  }
}

TEST_CASE("trace names: variables never climb out of the folder nor carry control characters (issue 29, defect 14)") {
  auto t = NameTemplate::parse("{run_name}/{mode}.{rank}.json", "--trace-filename");
  REQUIRE(t.ok());
  TraceVariables v;
  v.run_name = "../../evil";
  v.mode = "..";
  v.rank = 1;
  CHECK(t->expand(v) == ".._.._evil/_.1.json");  // the template's own '/' stays; the values' do not
  v.run_name = std::string("a\0b\x1b[2Jc", 8);
  v.mode = "x/y";
  CHECK(t->expand(v) == "a_b_[2Jc/x_y.1.json");
  for (const char* bad : {"{batch:>1000000000}", "{batch:.300}", "{rank:c}", "{run_name:>256}"}) {
    INFO(bad);
    auto r = NameTemplate::parse(bad, "--trace-filename");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::usage);
  }
  CHECK(NameTemplate::parse("{batch:>255}", "--trace-filename").ok());
}

TEST_CASE("trace ranks: torchrun's variables, GROUP_RANK when NODE_RANK is absent") {
  TraceVariables v;
  ranks_from_environment({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"},
                          {"GROUP_RANK", "1"}},
                         v);
  CHECK((v.rank == 5 && v.local_rank == 1 && v.world_size == 8 && v.local_world_size == 4 && v.node_rank == 1));
  TraceVariables w;
  ranks_from_environment({{"RANK", "x"}, {"NODE_RANK", "2"}, {"GROUP_RANK", "1"}}, w);
  CHECK((w.rank == 0 && w.world_size == 1 && w.node_rank == 2));
}

TEST_CASE("trace tracker: windows close at the last active step's end, epochs from set_epoch or DataLoader passes") {
  // wait=1, warmup=0, active=2, repeat=0: training indices 1-2, 4-5, 7-8, ...
  ScheduleTracker tracker(TraceSchedule{0, 1, 0, 2, 0});
  std::vector<TraceWindow> out;
  int64_t t = 0;
  auto add = [&](store::MarkerData d) { tracker.add(marker(t += 10, std::move(d)), out); };
  add(store::ModeChange{Mode::train});
  add(store::DataLoaderInit{0, 1, "_SingleProcessDataLoaderIter", 0, false});  // epoch 0
  for (int64_t i = 0; i < 3; ++i) {
    add(store::StepBegin{Mode::train, i, i});
    add(store::StepEnd{Mode::train, i, i});
  }
  REQUIRE(out.size() == 1);
  CHECK(out[0].first_step == 1);
  CHECK(out[0].vars.step == 2);
  CHECK(out[0].vars.batch == 3);
  CHECK(out[0].vars.epoch == 0);
  CHECK(out[0].complete);
  CHECK(out[0].begin_ns == 50);  // step 1's begin
  CHECK(out[0].end_ns == 80);    // step 2's end
  // Evaluation steps and an evaluation DataLoader do not count.
  add(store::ModeChange{Mode::eval});
  add(store::DataLoaderInit{0, 2, "_SingleProcessDataLoaderIter", 0, false});
  add(store::StepBegin{Mode::eval, 0, 3});
  add(store::ModeChange{Mode::train});
  add(store::DataLoaderInit{0, 3, "_SingleProcessDataLoaderIter", 0, false});  // epoch 1
  add(store::StepBegin{Mode::train, 3, 4});  // index 3: wait
  add(store::StepBegin{Mode::train, 4, 5});  // index 4: active
  add(store::StepBegin{Mode::train, 5, 6});  // index 5: active, last
  REQUIRE(out.size() == 1);
  add(store::ModeChange{Mode::eval});  // no step end marker: the mode change ends step 5
  REQUIRE(out.size() == 2);
  CHECK(out[1].vars.epoch == 1);
  CHECK(out[1].vars.batch_in_epoch == 3);
  CHECK(out[1].vars.mode == "train");
  // sprof.set_epoch wins over DataLoader passes from then on.
  add(store::Counter{"sprof", "epoch", 7});
  add(store::ModeChange{Mode::train});
  add(store::DataLoaderInit{0, 4, "_SingleProcessDataLoaderIter", 0, false});
  add(store::StepBegin{Mode::train, 6, 7});  // index 6: wait
  add(store::StepBegin{Mode::train, 7, 8});  // index 7: active, the window stays open
  tracker.process_ended(10, 500, out);
  REQUIRE(out.size() == 3);
  CHECK(out[2].vars.epoch == 7);
  CHECK(out[2].vars.batch_in_epoch == 2);
  CHECK_FALSE(out[2].complete);
  CHECK(out[2].end_ns == 500);
  // Another process keeps its own count.
  tracker.add(marker(600, store::StepBegin{Mode::global, 0, 0}, 11), out);
  tracker.add(marker(610, store::StepBegin{Mode::global, 1, 1}, 11), out);
  tracker.finish(700, out);
  REQUIRE(out.size() == 4);
  CHECK(out[3].pid == 11);
  CHECK(out[3].end_ns == 700);
  CHECK(out[3].vars.mode == "global");
}

TEST_CASE("trace windows hook: none without a schedule, a usage error for a bad one") {
  auto none = trace_windows_hook("", TraceWindowsOptions{});
  REQUIRE(none.ok());
  CHECK(*none == nullptr);
  auto hook = trace_windows_hook("wait=1,active=2", TraceWindowsOptions{});
  REQUIRE(hook.ok());
  CHECK(*hook != nullptr);
  auto bad = trace_windows_hook("wait=x", TraceWindowsOptions{});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == sprof::ErrorKind::usage);
}
