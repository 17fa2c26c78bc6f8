// Chrome trace: the sampled Python slices of a thread nest with its CUDA calls, however the
// samples fall (a viewer drops a slice that only partly overlaps another on its row).

#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/chrome_trace.hpp"
#include "sprof/sample_log.hpp"
#include "sprof/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace sprof;

namespace {

constexpr int32_t kPid = 4242;
constexpr int64_t kMs = 1'000'000;

struct Span {
  int64_t begin_us, end_us;
};

// Whether two spans overlap without one holding the other.
bool straddle(const Span& a, const Span& b) {
  return (a.begin_us < b.begin_us && b.begin_us < a.end_us && a.end_us < b.end_us) ||
         (b.begin_us < a.begin_us && a.begin_us < b.end_us && b.end_us < a.end_us);
}

struct Scenario {
  // One tick per entry: time, weight, stack depth (0: idle, no Python frames kept).
  struct Tick {
    int64_t t_ns, weight_ns;
    int depth;
  };
  std::vector<Tick> ticks;
  std::vector<std::pair<int64_t, int64_t>> calls;  // disjoint CUDA calls of the thread
};

// The trace's Python slices and CUDA calls of the sampled thread.
void write_and_read(const fs::path& dir, const Scenario& sc, std::vector<Span>& slices, std::vector<Span>& calls) {
  fs::path file = dir / "samples.log";
  fs::remove(file);
  auto writer = store::SampleLogWriter::create(file);
  REQUIRE(writer.ok());
  store::SampleLogWriter& w = **writer;
  w.add_process({kPid, 1, "3.11.7", "/usr/bin/python3", 0});
  uint32_t thread = w.thread(140000000001, kPid);
  std::vector<uint32_t> frames;  // outermost first: main, train_step, read_loss, helper
  const char* names[] = {"main", "train_step", "read_loss", "helper"};
  for (int d = 0; d < 4; ++d) frames.push_back(w.frame(w.function("train.py", names[d], d * 10 + 1), d * 10 + 2));
  for (const Scenario::Tick& tick : sc.ticks) {
    w.begin_tick(tick.t_ns, tick.weight_ns);
    std::vector<uint32_t> leaf_first(frames.rend() - tick.depth, frames.rend());
    w.add_sample(thread, w.stack(leaf_first), tick.depth == 0 ? store::kSampleIdle : 0);
    REQUIRE(w.end_tick().ok());
  }
  REQUIRE(w.close().ok());
  auto log = store::SampleLog::open(file);
  REQUIRE(log.ok());
  store::ProfileSamples samples;
  samples.processes.push_back({"4242-host", file, std::move(*log), nullptr});
  store::GpuTrace gpu;
  for (const auto& [begin, end] : sc.calls) {
    gpu.api_calls.push_back({gpu.intern("cudaMemcpy"), false, kPid, kPid, int64_t(gpu.api_calls.size() + 1), begin, end});
  }
  report::ChromeTraceParts parts;
  parts.samples = &samples;
  parts.gpu = &gpu;
  std::string text;
  report::write_chrome_trace(parts, text);
  nlohmann::json doc = nlohmann::json::parse(text);
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != kPid) continue;
    Span s{e["ts"].get<int64_t>(), e["ts"].get<int64_t>() + e["dur"].get<int64_t>()};
    (e["cat"] == "python_function" ? slices : calls).push_back(s);
  }
}

}  // namespace

TEST_CASE("chrome trace: a thread's samples that end during a CUDA call leave the call nested") {
  auto dir = TempDir::create("sprof-unit-");
  REQUIRE(dir.ok());
  // read_loss seen at 10 ms, and again 0.3 ms later by a sampler catching up after a late tick;
  // then the sampler is preempted past the end: the copy read_loss started at 10.31 ms runs to
  // 12.7 ms with no sample. (A trace window written under load ended read_loss at 10.6 ms,
  // inside the copy, and the trace engine dropped the copy.)
  Scenario sc;
  sc.ticks = {{9 * kMs, kMs, 3}, {10 * kMs, kMs, 3}, {10 * kMs + 300'000, 300'000, 3}};
  sc.calls = {{10 * kMs + 310'000, 12 * kMs + 700'000}};
  std::vector<Span> slices, calls;
  write_and_read(dir->path(), sc, slices, calls);
  REQUIRE(calls.size() == 1);
  REQUIRE(slices.size() == 3);
  for (const Span& s : slices) {
    CHECK_FALSE(straddle(s, calls[0]));
    CHECK(s.end_us <= calls[0].begin_us);  // the call began after the last sample: outside the stack
  }

  // The same, with the call begun before the last sample saw the stack: it ran under it.
  sc.calls = {{10 * kMs + 100'000, 12 * kMs + 700'000}};
  slices.clear();
  calls.clear();
  write_and_read(dir->path(), sc, slices, calls);
  REQUIRE(slices.size() == 3);
  for (const Span& s : slices) CHECK(s.end_us == calls[0].end_us);
}

TEST_CASE("chrome trace: Python slices and CUDA calls nest on random samples, gaps and calls") {
  auto dir = TempDir::create("sprof-unit-");
  REQUIRE(dir.ok());
  std::mt19937 rng(11);
  for (int round = 0; round < 150; ++round) {
    Scenario sc;
    int64_t t = 50 * kMs;
    int depth = 2;
    for (int i = 0; i < 60; ++i) {
      int64_t period = std::uniform_int_distribution<int64_t>(100'000, 3 * kMs)(rng);
      t += period;
      // A late tick's weight covers its period, or (a paused sampler, a thread not seen) less.
      int64_t weight = rng() % 6 == 0 ? std::uniform_int_distribution<int64_t>(50'000, period)(rng) : period;
      if (rng() % 3 == 0) depth = int(rng() % 5);
      sc.ticks.push_back({t / 1000 * 1000, weight / 1000 * 1000, depth});
    }
    int64_t c = 50 * kMs;
    while (c < t + 5 * kMs) {
      c += std::uniform_int_distribution<int64_t>(1'000, 6 * kMs)(rng);
      int64_t end = c + std::uniform_int_distribution<int64_t>(2'000, 4 * kMs)(rng);
      sc.calls.push_back({c, end});
      c = end;
    }
    std::vector<Span> slices, calls;
    write_and_read(dir->path(), sc, slices, calls);
    INFO("round " << round);
    REQUIRE(!slices.empty());
    for (const Span& s : slices) {
      for (const Span& call : calls) {
        if (straddle(s, call)) FAIL_CHECK("slice [" << s.begin_us << ", " << s.end_us << ") straddles call [" << call.begin_us << ", " << call.end_us << ")");
      }
      for (const Span& other : slices) {
        if (straddle(s, other)) FAIL_CHECK("slices straddle: [" << s.begin_us << ", " << s.end_us << ") [" << other.begin_us << ", " << other.end_us << ")");
      }
    }
  }
}
