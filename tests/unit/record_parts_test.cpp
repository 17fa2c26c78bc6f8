// Parts of record that can be checked without a target: the manifest round trip, the jittered
// rate timer, the sampling loop's priority, and the default output name.

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sampler/rate_timer.hpp"
#include "sampler/sampling_loop.hpp"
#include "sprof/clock.hpp"
#include "sprof/manifest.hpp"
#include "sprof/launch.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

TEST_CASE("manifest round trip keeps every field and foreign sections", "[record]") {
  std::string tmpl = (fs::temp_directory_path() / "sprof-manifest-XXXXXX").string();
  fs::path dir = mkdtemp(tmpl.data());
  sprof::store::Manifest m;
  m.sprof_version = "0.1.0";
  m.state = "complete";
  m.mode = "launch";
  m.command = {"python3", "train.py", "--epochs", "2"};
  m.target_pid = 4242;
  m.host = "algo-1";
  m.clock_monotonic_ns = 5'000'000'000;
  m.clock_realtime_ns = 1'700'000'000'000'000'000;
  m.start_ns = 5'000'100'000;
  m.end_ns = 15'000'100'000;
  m.rate_hz = 250;
  m.blocking = true;
  m.subprocesses = true;
  sprof::store::ManifestProcess p;
  p.pid = 4242;
  p.ppid = 1;
  p.node_id = "4242-algo-1";
  p.python_version = "3.11.2";
  p.sample_log = "samples/4242-algo-1/samples.log";
  p.samples = 1000;
  p.invalid = 3;
  p.threads = 2;
  p.rank = "0";
  m.processes.push_back(p);
  m.health.ticks = 1000;
  m.health.thread_samples = 1000;
  m.health.invalid = 3;
  m.health.sampler_cpu_s = 0.25;
  m.health.process_cpu_s = 0.5;
  m.exit_status = 130;
  m.exit_signal = 2;
  m.errors = {"something odd"};
  m.extra = {{"bootstrap", R"({"steps":12})"}};
  REQUIRE(sprof::store::write_manifest(dir, m).ok());

  auto back = sprof::store::read_manifest(dir);
  REQUIRE(back.ok());
  CHECK(back->command == m.command);
  CHECK(back->target_pid == 4242);
  CHECK(back->start_ns == m.start_ns);
  CHECK(back->to_epoch_us(m.start_ns) == (m.start_ns - m.clock_monotonic_ns + m.clock_realtime_ns) / 1000);
  CHECK(back->blocking);
  CHECK(back->rate_hz == 250);
  REQUIRE(back->processes.size() == 1);
  CHECK(back->processes[0].node_id == "4242-algo-1");
  CHECK(back->processes[0].rank == "0");
  CHECK(back->node_ids() == std::vector<std::string>{"4242-algo-1"});
  CHECK(back->health.invalid == 3);
  CHECK(std::abs(back->health.invalid_share() - 3.0 / 1003.0) < 1e-12);
  CHECK(back->health.sampler_cpu_s == 0.25);
  CHECK(back->health.process_cpu_s == 0.5);
  CHECK(back->exit_status == 130);
  CHECK(back->exit_signal == 2);
  REQUIRE(back->extra.size() == 1);
  CHECK(back->extra[0].first == "bootstrap");
  CHECK(nlohmann::json::parse(back->extra[0].second)["steps"] == 12);

  std::ofstream(dir / "sprof.json") << "{not json";
  CHECK(sprof::store::read_manifest(dir).error().kind == sprof::ErrorKind::bad_input);
  fs::remove_all(dir);
}

TEST_CASE("rate timer: exponential gaps with the requested mean, backlog dropped when far behind", "[record]") {
  const double rate = 1000;
  sprof::sampler::RateTimer timer(rate, 42, 0);
  int64_t previous = timer.due_ns();
  double sum = 0, sum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    int64_t due = timer.due_ns();
    CHECK_FALSE(timer.on_tick(due));  // always on time
    double gap = double(timer.due_ns() - previous);
    (void)due;
    previous = timer.due_ns();
    sum += gap;
    sum_sq += gap * gap;
  }
  double mean = sum / n;
  double sd = std::sqrt(sum_sq / n - mean * mean);
  CHECK(std::abs(mean - 1e6) < 0.01 * 1e6);  // mean 1 ms
  CHECK(std::abs(sd - mean) < 0.02 * mean);  // exponential: sd equals the mean
  CHECK(timer.late_ticks() == 0);

  // Two seconds late: one "behind" event, and the next tick is scheduled from now.
  int64_t now = timer.due_ns() + 2'000'000'000;
  CHECK(timer.on_tick(now));
  CHECK(timer.behind_events() == 1);
  CHECK(timer.due_ns() > now);
  CHECK(timer.max_lag_ns() >= 2'000'000'000);

  // A late tick that sampled nothing (no process being sampled) is not a late tick of the
  // recording: late_ticks never exceeds the ticks that count.
  uint64_t late = timer.late_ticks();
  CHECK_FALSE(timer.on_tick(timer.due_ns() + 500'000'000, false));
  CHECK(timer.late_ticks() == late);
  CHECK_FALSE(timer.on_tick(timer.due_ns() + 500'000'000, true));
  CHECK(timer.late_ticks() == late + 1);
}

TEST_CASE("sampling loop: samples and keeps house at the raised priority when permitted, hooks at the thread's own",
          "[record]") {
  auto nice_now = [] {
    errno = 0;
    int value = getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
    REQUIRE(errno == 0);
    return value;
  };
  const int own = nice_now();
  sprof::sampler::LoopOptions options;
  options.rate_hz = 1000;
  options.start_ns = sprof::monotonic_ns();
  options.housekeeping_ns = 2'000'000;
  options.sampling_nice = own - 5;
  sprof::sampler::SamplingLoop loop(options);
  std::vector<int> at_ticks, at_housekeeping, in_hooks, after_hooks;
  loop.run([&](int64_t) { return at_ticks.push_back(nice_now()), true; },
           [&](int64_t) {
             at_housekeeping.push_back(nice_now());
             loop.at_own_priority([&] { in_hooks.push_back(nice_now()); });
             after_hooks.push_back(nice_now());
           },
           [&] { return at_ticks.size() >= 20 && at_housekeeping.size() >= 3; });
  // Lowering the nice value is a privilege (root, CAP_SYS_NICE or RLIMIT_NICE): without it the
  // loop samples at the thread's own.
  const int expected = loop.raised_priority() ? own - 5 : own;
  if (geteuid() == 0) CHECK(loop.raised_priority());
  auto all = [](const std::vector<int>& v, int value) { return std::count(v.begin(), v.end(), value) == long(v.size()); };
  CHECK(all(at_ticks, expected));
  CHECK(all(at_housekeeping, expected));
  CHECK(all(in_hooks, own));  // what hooks start (rule programs, uploads) does not inherit it
  CHECK(all(after_hooks, expected));
  CHECK(nice_now() == own);  // given back when the loop ends
}

TEST_CASE("default output name", "[record]") {
  // 2024-03-05 06:07:08 UTC
  CHECK(sprof::launch::default_output_name(1234, int64_t(1709618828) * 1'000'000'000) ==
        "sprof-1234-20240305T060708Z");
}

TEST_CASE("manifest numbers out of range are errors naming the key, never undefined behaviour", "[record]") {
  sprof::test::TempDir dir;
  auto write = [&](const std::string& text) { sprof::test::write_file(dir.path() / "sprof.json", text); };
  write(R"({"schema_version": 1, "target_pid": 1.79547e+26})");  // found by fuzz_manifest (UBSan)
  auto huge = sprof::store::read_manifest(dir.path());
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message.find("\"target_pid\" is not an integer in range") != std::string::npos);
  write(R"({"schema_version": 1, "processes": [{"pid": 99999999999}]})");
  CHECK_FALSE(sprof::store::read_manifest(dir.path()).ok());
  write(R"({"schema_version": 1, "target_pid": "x"})");
  auto text = sprof::store::read_manifest(dir.path());
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().message.find("\"target_pid\" has the wrong type (string)") != std::string::npos);
  write(R"({"schema_version": 1, "target_pid": 42, "exit": {"status": 1099511627776}})");
  CHECK_FALSE(sprof::store::read_manifest(dir.path()).ok());
}
