// Per-interval stats from samples: which samples land in which stats directory, and the pstats
// numbers (times from the weights, cumulative once per stack, calls observed, callers).

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sprof/interval_stats.hpp"
#include "sprof/markers.hpp"
#include "sprof/pstats.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace sprof;
using intervals::PythonTimer;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kBase = 1'000 * kMs;  // monotonic time of the recording's start
constexpr int64_t kRealtime = 1'700'000'000'000'000'000;

struct Fixture {
  test::TempDir dir;
  store::ProfileSamples profile;
  timeline::StepTimeline timeline;
};

// Frames, root first, as "name:line" of a small fake program.
struct Program {
  store::SampleLogWriter& w;
  uint32_t module, step, slow, busy, rec;
  explicit Program(store::SampleLogWriter& writer)
      : w(writer),
        module(w.function("/app/train.py", "<module>", 1)),
        step(w.function("/app/train.py", "Model.step", 10)),
        slow(w.function("/app/train.py", "slow", 20)),
        busy(w.function("/app/train.py", "busy", 30)),
        rec(w.function("/app/train.py", "rec", 40)) {}
  uint32_t stack(std::vector<std::pair<uint32_t, int32_t>> root_first) {
    std::vector<uint32_t> frames;
    for (auto it = root_first.rbegin(); it != root_first.rend(); ++it) frames.push_back(w.frame(it->first, it->second));
    return w.stack(frames);
  }
};

void tick(store::SampleLogWriter& w, int64_t t_ms_after_base, uint32_t thread, uint32_t stack, uint8_t flags) {
  w.begin_tick(kBase + t_ms_after_base * kMs, 10 * kMs);
  w.add_sample(thread, stack, flags);
  REQUIRE(w.end_tick().ok());
}

std::unique_ptr<Fixture> make_fixture() {
  auto f = std::make_unique<Fixture>();
  const fs::path dir = f->dir.path();
  store::Manifest m;
  m.clock_monotonic_ns = 0;
  m.clock_realtime_ns = kRealtime;
  m.start_ns = kBase;
  m.end_ns = kBase + 800 * kMs;
  m.state = "complete";
  for (int pid : {7, 8}) {
    store::ManifestProcess p;
    p.pid = pid;
    p.node_id = fmt::format("{}-host", pid);
    p.python_version = "3.11.7";
    p.cmdline = {"python3", "train.py"};
    p.sample_log = fmt::format("samples/{}-host/samples.log", pid);
    p.attach_ns = kBase;
    p.detach_ns = kBase + 700 * kMs;
    m.processes.push_back(p);
  }
  REQUIRE(store::write_manifest(dir, m).ok());

  {  // pid 7: a training loop with markers
    fs::create_directories(dir / "samples/7-host");
    auto w = store::SampleLogWriter::create(dir / "samples/7-host/samples.log");
    REQUIRE(w.ok());
    store::SampleLogWriter& log = **w;
    log.add_process({7, 1, "3.11.7", "/usr/bin/python3", kBase});
    Program p(log);
    uint32_t main = log.thread(1, 7);
    uint32_t top = p.stack({{p.module, 3}});
    for (int t = -5; t < 100; t += 10) tick(log, t, main, top, 0);                 // 11 samples, one before hello
    uint32_t sleeping = p.stack({{p.module, 5}, {p.step, 12}, {p.slow, 21}});
    for (int t = 105; t < 300; t += 10) tick(log, t, main, sleeping, store::kSampleIdle);  // 20 idle
    uint32_t between = p.stack({{p.module, 6}});
    for (int t = 305; t < 400; t += 10) tick(log, t, main, between, 0);           // 10, 3 of them paused
    uint32_t in_busy = p.stack({{p.module, 7}, {p.step, 13}, {p.busy, 31}});
    uint32_t in_step = p.stack({{p.module, 7}, {p.step, 14}});
    for (int i = 0; i < 10; ++i) tick(log, 405 + 10 * i, main, i % 2 == 0 ? in_busy : in_step, 0);
    uint32_t recursing = p.stack({{p.module, 8}, {p.rec, 41}, {p.rec, 42}, {p.rec, 42}});
    for (int t = 505; t < 720; t += 10) tick(log, t, main, recursing, 0);         // 22, 2 after the exit
    REQUIRE(log.close().ok());
  }
  {  // pid 8: no markers at all
    fs::create_directories(dir / "samples/8-host");
    auto w = store::SampleLogWriter::create(dir / "samples/8-host/samples.log");
    REQUIRE(w.ok());
    store::SampleLogWriter& log = **w;
    log.add_process({8, 7, "3.11.7", "/usr/bin/python3", kBase});
    Program p(log);
    uint32_t main = log.thread(1, 8);
    uint32_t top = p.stack({{p.module, 3}});
    uint32_t later = p.stack({{p.module, 4}});
    for (int t = 5; t < 100; t += 10) tick(log, t, main, top, 0);
    tick(log, 105, main, 0, 0);  // no Python frames: proves no call ended
    for (int t = 115; t < 200; t += 10) tick(log, t, main, later, 0);
    REQUIRE(log.close().ok());
  }
  auto loaded = store::load_profile_samples(dir);
  REQUIRE(loaded.ok());
  f->profile = std::move(loaded).value();

  auto at = [](int ms) { return std::to_string(kBase + ms * kMs); };
  std::string text = "hello " + at(0) + " 7 7 1 1 start 3.11.7 /usr/bin/python3\n" +
                     "mode " + at(100) + " 7 7 train\n" +
                     "sb " + at(100) + " 7 7 train 0 0\n" +
                     "se " + at(300) + " 7 7 train 0 0\n" +
                     "pause " + at(320) + " 7 7 pause\n" +
                     "resume " + at(350) + " 7 7 resume\n" +
                     "sb " + at(400) + " 7 7 train 1 1\n" +
                     "se " + at(500) + " 7 7 train 1 1\n" +
                     "close " + at(600) + " 7 7 exit\n";
  store::MarkerParser::Stats stats;
  auto markers = store::parse_markers(text, &stats);
  REQUIRE(stats.skipped == 0);
  timeline::StepTimelineBuilder builder;
  builder.add(markers);
  builder.set_process_exit(7, kBase + 700 * kMs);
  f->timeline = builder.build();
  return f;
}

std::string us(int ms) { return store::python_float_repr(double(kRealtime + kBase + ms * kMs) / 1000.0); }

const store::FunctionStats& stats_of(const store::StatsTable& table, const std::string& name) {
  for (const auto& [key, value] : table.entries()) {
    if (key.name == name) return value;
  }
  FAIL("no function " << name);
  throw;
}

const store::CallerStats& caller(const store::FunctionStats& fs, const std::string& name) {
  for (const auto& [key, value] : fs.callers) {
    if (key.name == name) return value;
  }
  FAIL("no caller " << name);
  throw;
}

}  // namespace

TEST_CASE("intervals: one per timeline interval, named as smdebug names stats dirs", "[intervals]") {
  auto f = make_fixture();
  auto planned = intervals::plan_intervals(f->profile, f->timeline);
  REQUIRE(planned.ok());
  std::vector<std::string> names;
  for (const auto& i : *planned) names.push_back(i.relative_dir().string());
  std::string node7 = "framework/python/pyinstrument/7-host/";
  std::string node8 = "framework/python/pyinstrument/8-host/";
  CHECK(names == std::vector<std::string>{
                     node7 + "prestepzero-*-start-" + us(0) + "_train-0-stepstart-" + us(100),
                     node8 + "prestepzero-*-start-" + us(0) + "_posthookclose-*-end-" + us(700),
                     node7 + "train-0-stepstart-" + us(100) + "_train-0-stepend-" + us(300),
                     node7 + "train-0-stepend-" + us(300) + "_train-1-stepstart-" + us(400),
                     node7 + "train-1-stepstart-" + us(400) + "_train-1-stepend-" + us(500),
                     node7 + "train-1-stepend-" + us(500) + "_posthookclose-*-end-" + us(700),
                 });
  CHECK(us(100) == "1700000001100000.0");
}

TEST_CASE("intervals: pstats numbers from samples", "[intervals]") {
  auto f = make_fixture();
  auto planned = intervals::plan_intervals(f->profile, f->timeline);
  REQUIRE(planned.ok());
  std::map<std::string, intervals::IntervalStats> by_kind;
  for (const auto& i : *planned) {
    if (i.pid != 7) continue;
    by_kind[timeline::to_string(i.interval.kind)] = intervals::build_interval_stats(f->profile, i, PythonTimer::total_time);
  }
  REQUIRE(by_kind.size() == 4);  // pre_step_zero, step (2, the later overwrites), between_steps, post_hook_close

  // A sample stands for the 10 ms before it, in the interval its time lies in, for no more than
  // the time since the interval began; the rest, before the boundary, goes to the stack of the
  // thread's last sample in the interval before. Every boundary here falls mid-sample: the
  // samples at 105, 305, 405 and 505 ms count 5 ms where they lie, 5 ms for the sample before.
  // Before the first step, including the sample taken before the bootstrap said hello.
  const auto& pre = by_kind["pre_step_zero"];
  CHECK(pre.samples == 11);
  CHECK(stats_of(pre.table, "<module>").tt == Approx(0.115));
  CHECK(stats_of(pre.table, "<module>").nc == 1);
  CHECK(pre.seconds == Approx(0.115));

  // The gap between the steps, less the paused samples (325, 335, 345 ms): its spans are
  // [300, 320) and [350, 400), so 305 and 355 count 5 ms each, and 315's stack holds for the
  // 5 ms of 325 before the pause and 395's for the 5 ms of 405 before step 1.
  const auto& gap = by_kind["between_steps"];
  CHECK(gap.samples == 7);
  CHECK(gap.seconds == Approx(0.07));

  // Recursion as cProfile counts it: cumulative once per stack, 3 calls of which 1 primitive.
  const auto& post = by_kind["post_hook_close"];
  CHECK(post.samples == 22);  // the two after the process's exit too
  const auto& rec = stats_of(post.table, "rec");
  CHECK(rec.nc == 3);
  CHECK(rec.cc == 1);
  CHECK(rec.tt == Approx(0.215));
  CHECK(rec.ct == Approx(0.215));
  CHECK(stats_of(post.table, "<module>").ct == Approx(0.215));
  CHECK(stats_of(post.table, "<module>").tt == 0.0);
  const auto& self_edge = caller(rec, "rec");
  CHECK(self_edge.nc == 2);
  CHECK(self_edge.cc == 1);
  CHECK(self_edge.tt == Approx(0.215));
  CHECK(self_edge.ct == Approx(0.215));
  const auto& from_module = caller(rec, "<module>");
  CHECK(from_module.nc == 1);
  CHECK(from_module.tt == 0.0);
  CHECK(from_module.ct == Approx(0.215));
  // pstats totals: the sum of tottime is the sum of the kept samples' weights.
  CHECK(post.table.total_tt() == Approx(post.seconds));
  CHECK(post.table.total_calls() == 4);  // <module> 1 + rec 3

  // The call tree merges the recursive frames per path, not per function.
  REQUIRE(post.tree.size() == 5);
  CHECK(post.tree[0].time_s == Approx(0.215));
}

TEST_CASE("intervals: a process without markers is one interval; its outermost call is one call", "[intervals]") {
  auto f = make_fixture();
  auto planned = intervals::plan_intervals(f->profile, f->timeline);
  REQUIRE(planned.ok());
  auto whole = std::find_if(planned->begin(), planned->end(), [](const auto& i) { return i.pid == 8; });
  REQUIRE(whole != planned->end());
  CHECK(whole->framework == "python");
  auto stats = intervals::build_interval_stats(f->profile, *whole, PythonTimer::total_time);
  CHECK(stats.samples == 19);
  const auto& module = stats_of(stats.table, "<module>");
  CHECK(module.nc == 1);  // its line moved and a sample had no frames: still the same call
  CHECK(module.tt == Approx(0.19));
}

TEST_CASE("intervals: calls observed, callers and timers", "[intervals]") {
  auto f = make_fixture();
  auto planned = intervals::plan_intervals(f->profile, f->timeline);
  REQUIRE(planned.ok());
  const intervals::ProcessInterval* step0 = nullptr;
  const intervals::ProcessInterval* step1 = nullptr;
  for (const auto& i : *planned) {
    if (i.interval.kind != timeline::IntervalKind::step) continue;
    (i.interval.start.step == 0 ? step0 : step1) = &i;
  }
  REQUIRE(step0);
  REQUIRE(step1);

  SECTION("a sleep is idle: all of it in total_time and off_cpu_time, none in cpu_time") {
    // [100, 300): 5 ms of 105, 115 ... 295, and 295's stack for the 5 ms of 305 before the end.
    auto total = intervals::build_interval_stats(f->profile, *step0, PythonTimer::total_time);
    const auto& slow = stats_of(total.table, "slow");
    CHECK(slow.tt == Approx(0.2));
    CHECK(slow.nc == 1);
    CHECK(caller(slow, "step").ct == Approx(0.2));
    CHECK(stats_of(total.table, "step").ct == Approx(0.2));  // co_name, not "Model.step"
    CHECK(total.seconds == Approx(0.2));  // the step's 200 ms, no more
    auto off = intervals::build_interval_stats(f->profile, *step0, PythonTimer::off_cpu_time);
    CHECK(stats_of(off.table, "slow").tt == Approx(0.2));
    auto cpu = intervals::build_interval_stats(f->profile, *step0, PythonTimer::cpu_time);
    // No kept sample: the one zero entry that keeps python_stats loadable.
    REQUIRE(cpu.table.size() == 1);
    CHECK(cpu.table.entries()[0].first == store::no_samples_function());
    CHECK(cpu.table.entries()[0].second.nc == 0);
    CHECK(cpu.table.entries()[0].second.tt == 0.0);
    CHECK(cpu.samples == 0);
    CHECK(cpu.cpu_seconds == 0.0);
  }
  SECTION("a busy loop is on-CPU; a function left and re-entered counts as a new call") {
    auto cpu = intervals::build_interval_stats(f->profile, *step1, PythonTimer::cpu_time);
    // [400, 500): 5 ms of 405 (busy), 415 ... 495, and 495's stack (step) for 5 ms of 505.
    const auto& busy = stats_of(cpu.table, "busy");
    CHECK(busy.nc == 5);
    CHECK(busy.cc == 5);
    CHECK(busy.tt == Approx(0.045));
    CHECK(caller(busy, "step").nc == 5);
    const auto& step = stats_of(cpu.table, "step");
    CHECK(step.nc == 1);  // the same call throughout: its caller stayed on the same line
    CHECK(step.tt == Approx(0.055));
    CHECK(step.ct == Approx(0.1));
    CHECK(cpu.cpu_seconds == Approx(0.1));
    auto off = intervals::build_interval_stats(f->profile, *step1, PythonTimer::off_cpu_time);
    REQUIRE(off.table.size() == 1);
    CHECK(off.table.entries()[0].first == store::no_samples_function());
  }
}

TEST_CASE("intervals: stats directories written, readable, and windows respected", "[intervals]") {
  auto f = make_fixture();
  intervals::WriteOptions options;
  options.timer = PythonTimer::cpu_time;
  auto summary = intervals::write_interval_stats(f->profile, f->timeline, options);
  REQUIRE(summary.ok());
  CHECK(summary->intervals == 6);
  CHECK(summary->directories == 6);
  CHECK(summary->without_samples == 1);  // step 0 only slept

  const fs::path node7 = f->dir.path() / "framework/python/pyinstrument/7-host";
  fs::path step0 = node7 / ("train-0-stepstart-" + us(100) + "_train-0-stepend-" + us(300));
  // Every interval has all three files; one without samples holds the single zero entry.
  auto empty = store::read_pstats(step0 / "python_stats");
  REQUIRE(empty.ok());
  REQUIRE(empty->size() == 1);
  CHECK(empty->entries()[0].first.name == "<sprof: no samples>");
  CHECK(empty->entries()[0].second.nc == 0);
  auto tree0 = nlohmann::json::parse(test::read_file(step0 / "python_stats.json"));
  CHECK(tree0["root_frame"].is_null());
  CHECK(tree0["timer"] == "cpu_time");
  CHECK(fs::exists(step0 / "python_stats.html"));

  fs::path step1 = node7 / ("train-1-stepstart-" + us(400) + "_train-1-stepend-" + us(500));
  auto table = store::read_pstats(step1 / "python_stats");
  REQUIRE(table.ok());
  CHECK(stats_of(*table, "busy").nc == 5);
  auto tree = nlohmann::json::parse(test::read_file(step1 / "python_stats.json"));
  CHECK(tree["root_frame"]["function"] == "<module>");
  CHECK(tree["root_frame"]["time"].get<double>() == Approx(0.1));
  CHECK(tree["root_frame"]["children"][0]["function"] == "Model.step");
  CHECK(tree["sample_count"] == 10);
  CHECK(tree["duration"].get<double>() == Approx(0.1));
  CHECK(tree["program"] == "python3 train.py");

  SECTION("only the intervals a window includes") {
    fs::remove_all(f->dir.path() / "framework");
    // as a window does it: the process's own intervals by index, a marker-less process always
    options.include = [&](const intervals::ProcessInterval& i) {
      if (!i.timeline_index) return true;
      return f->timeline.find(i.pid)->intervals.at(*i.timeline_index).kind == timeline::IntervalKind::step;
    };
    auto windowed = intervals::write_interval_stats(f->profile, f->timeline, options);
    REQUIRE(windowed.ok());
    CHECK(windowed->directories == 3);  // the two steps, and pid 8's whole life
    CHECK(windowed->excluded == 3);  // pid 7: pre-step-zero, the gap, post-hook-close
    size_t dirs = 0;
    for (const auto& e : fs::directory_iterator(node7)) dirs += e.is_directory() ? 1 : 0;
    CHECK(dirs == 2);
  }
}

TEST_CASE("intervals: a profile without a manifest cannot be dated", "[intervals]") {
  store::ProfileSamples empty;
  empty.dir = "/nonexistent";
  auto planned = intervals::plan_intervals(empty, {});
  REQUIRE_FALSE(planned.ok());
  CHECK(planned.error().kind == ErrorKind::bad_input);
}
