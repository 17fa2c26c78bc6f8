// Sample log: round trip, time-range iteration, and recovery from a cut or corrupt tail.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sprof/sample_log.hpp"

namespace fs = std::filesystem;
using sprof::store::SampleLog;
using sprof::store::SampleLogWriter;
using sprof::store::SampleRecord;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sprof-unit-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// What the test wrote, resolved to strings, so it can be compared with what the reader returns.
struct Expected {
  int64_t time_ns;
  int64_t weight_ns;
  uint64_t python_thread_id;
  std::vector<std::string> frames;  // "name file:line", leaf first
  uint8_t flags;
  size_t chunk;  // how many flushes happened before this sample
};

std::vector<std::string> resolve(const SampleLog& log, uint32_t stack) {
  std::vector<uint32_t> ids;
  log.stack_frames(stack, ids);
  std::vector<std::string> out;
  for (uint32_t id : ids) {
    const auto& frame = log.frames()[id];
    const auto& fn = log.functions()[frame.function];
    out.push_back(fn.name + " " + fn.file + ":" + std::to_string(frame.line));
  }
  return out;
}

std::vector<Expected> read_back(const SampleLog& log) {
  std::vector<Expected> out;
  log.for_each_sample([&](const SampleRecord& r) {
    out.push_back({r.time_ns, r.weight_ns, log.threads()[r.thread].python_thread_id, resolve(log, r.stack), r.flags, 0});
  });
  return out;
}

// Writes a log of random but reproducible content; returns the samples and, per chunk, the file
// size after it.
std::vector<Expected> write_random_log(const fs::path& file, int ticks, std::vector<size_t>& chunk_ends,
                                       uint32_t seed = 7) {
  std::mt19937 rng(seed);
  auto writer = SampleLogWriter::create(file);
  REQUIRE(writer.ok());
  SampleLogWriter& w = **writer;
  w.add_process({4242, 1, "3.11.7", "/usr/bin/python3", 1'000'000'000});

  const char* names[] = {"main", "train_step", "forward", "Module._call_impl", "loader_σ", "wait"};
  const char* files[] = {"train.py", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", "threading.py"};
  std::vector<Expected> expected;
  int64_t t = 5'000'000'000;
  size_t flushes = 0;
  std::vector<uint64_t> thread_ids = {140000000001, 140000000002, 140000000003};
  std::vector<std::vector<std::string>> last(thread_ids.size());
  for (int tick = 0; tick < ticks; ++tick) {
    int64_t dt = std::uniform_int_distribution<int64_t>(1, 30000)(rng) * 1000;
    t += dt;
    int64_t weight = (tick % 17 == 0) ? dt + 5000 : dt;
    w.begin_tick(t, weight);
    for (size_t th = 0; th < thread_ids.size(); ++th) {
      if ((tick + int(th)) % 5 == 4) continue;  // threads come and go
      std::vector<std::string> frames;
      std::vector<uint32_t> ids;
      bool repeat = !last[th].empty() && rng() % 3 != 0;
      int depth = std::uniform_int_distribution<int>(0, 6)(rng);
      if (repeat) depth = -1;
      if (depth >= 0) {
        for (int d = 0; d < depth; ++d) {
          const char* n = names[rng() % 6];
          const char* f = files[rng() % 3];
          int line = int(rng() % 40) - 1;  // include -1: "no line"
          uint32_t fn = w.function(f, n, 1);
          ids.push_back(w.frame(fn, line));
          frames.push_back(std::string(n) + " " + f + ":" + std::to_string(line));
        }
        last[th] = frames;
      } else {
        frames = last[th];
        // Re-intern the same strings: the writer must hand back the same stack.
        for (const auto& s : frames) {
          auto space = s.find(' ');
          auto colon = s.rfind(':');
          uint32_t fn = w.function(s.substr(space + 1, colon - space - 1), s.substr(0, space), 1);
          ids.push_back(w.frame(fn, std::stoi(s.substr(colon + 1))));
        }
      }
      uint32_t thread = w.thread(thread_ids[th], int32_t(1000 + th));
      if (tick == 5) w.set_thread_name(thread, "worker-" + std::to_string(th));
      auto flags = uint8_t(rng() % 4);
      w.add_sample(thread, w.stack(ids), flags);
      expected.push_back({t / 1000 * 1000, weight / 1000 * 1000, thread_ids[th], frames, flags, flushes});
    }
    REQUIRE(w.end_tick().ok());
    if (tick % 50 == 49) {
      w.add_invalid(2);
      REQUIRE(w.flush().ok());
      ++flushes;
      chunk_ends.push_back(fs::file_size(file));
    }
  }
  REQUIRE(w.close().ok());
  if (chunk_ends.empty() || chunk_ends.back() != fs::file_size(file)) chunk_ends.push_back(fs::file_size(file));
  return expected;
}

bool same(const Expected& a, const Expected& b) {
  return a.time_ns == b.time_ns && a.weight_ns == b.weight_ns && a.python_thread_id == b.python_thread_id &&
         a.frames == b.frames && a.flags == b.flags;
}

}  // namespace

TEST_CASE("sample log round trip", "[sample_log]") {
  TempDir dir;
  fs::path file = dir.path / "samples.log";
  std::vector<size_t> chunk_ends;
  auto expected = write_random_log(file, 400, chunk_ends);

  auto log = SampleLog::open(file);
  REQUIRE(log.ok());
  CHECK(log->trailing_bytes() == 0);
  CHECK(log->pid() == 4242);
  REQUIRE(log->processes().size() == 1);
  CHECK(log->processes()[0].python_version == "3.11.7");
  CHECK(log->processes()[0].attach_ns == 1'000'000'000);
  CHECK(log->sample_count() == expected.size());
  CHECK(log->invalid_count() == 2 * 8);
  CHECK(log->chunk_count() == chunk_ends.size());
  REQUIRE(log->threads().size() == 3);
  CHECK(log->threads()[1].name == "worker-1");
  CHECK(log->threads()[2].native_tid == 1002);

  auto got = read_back(*log);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("sample " << i);
    CHECK(same(got[i], expected[i]));
  }

  // Repeated stacks are interned once: fewer stack nodes than frames written.
  size_t frames_written = 0;
  for (const auto& e : expected) frames_written += e.frames.size();
  CHECK(log->stack_nodes().size() < frames_written);
}

TEST_CASE("sample log time-range iteration matches a filter over everything", "[sample_log]") {
  TempDir dir;
  fs::path file = dir.path / "samples.log";
  std::vector<size_t> chunk_ends;
  auto expected = write_random_log(file, 300, chunk_ends, 11);
  auto log = SampleLog::open(file);
  REQUIRE(log.ok());
  std::mt19937 rng(3);
  int64_t lo = expected.front().time_ns - 10, hi = expected.back().time_ns + 10;
  for (int round = 0; round < 50; ++round) {
    int64_t a = std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    int64_t b = std::uniform_int_distribution<int64_t>(a, hi)(rng);
    if (round == 0) a = b = expected[10].time_ns;  // empty half-open range
    if (round == 1) { a = expected[10].time_ns; b = a + 1; }
    std::vector<int64_t> want;
    for (const auto& e : expected) {
      if (e.time_ns >= a && e.time_ns < b) want.push_back(e.time_ns);
    }
    std::vector<int64_t> got;
    log->for_each_sample(a, b, [&](const SampleRecord& r) { got.push_back(r.time_ns); });
    CHECK(got == want);
  }
}

TEST_CASE("sample log overlap iteration weighs each sample by the part of its time inside the window", "[sample_log]") {
  TempDir dir;
  fs::path file = dir.path / "samples.log";
  std::vector<size_t> chunk_ends;
  auto expected = write_random_log(file, 300, chunk_ends, 11);
  auto log = SampleLog::open(file);
  REQUIRE(log.ok());
  std::mt19937 rng(5);
  int64_t lo = expected.front().time_ns - 10, hi = expected.back().time_ns + 10;
  for (int round = 0; round < 50; ++round) {
    int64_t a = std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    int64_t b = std::uniform_int_distribution<int64_t>(a, std::min(hi, a + 50'000'000))(rng);
    // The oracle: every sample's interval (time - weight, time] clipped to [a, b).
    int64_t want = 0;
    size_t want_count = 0;
    for (const auto& e : expected) {
      int64_t overlap = std::min(e.time_ns, b) - std::max(e.time_ns - e.weight_ns, a);
      if (overlap > 0) {
        want += overlap;
        ++want_count;
      }
    }
    int64_t got = 0;
    size_t got_count = 0;
    log->for_each_overlap(a, b, [&](const SampleRecord& r, int64_t overlap) {
      CHECK(overlap <= r.weight_ns);
      CHECK(overlap <= b - a);
      got += overlap;
      if (overlap > 0) ++got_count;
    });
    CHECK(got == want);
    CHECK(got_count == want_count);
  }
  // Several disjoint windows in one pass: each sample once, with its overlaps summed.
  for (int round = 0; round < 50; ++round) {
    std::vector<SampleLog::Window> windows;
    int64_t t = std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    for (int k = 0; k < 20 && t < hi; ++k) {
      int64_t length = std::uniform_int_distribution<int64_t>(0, 30'000'000)(rng);
      windows.push_back({t, t + length});
      t += length + std::uniform_int_distribution<int64_t>(0, 30'000'000)(rng);
    }
    int64_t want = 0, got = 0;
    size_t want_count = 0, got_count = 0;
    for (const auto& e : expected) {
      int64_t sum = 0;
      for (const auto& [a, b] : windows) sum += std::max<int64_t>(0, std::min(e.time_ns, b) - std::max(e.time_ns - e.weight_ns, a));
      want += sum;
      want_count += sum > 0 ? 1 : 0;
    }
    log->for_each_overlap(windows, [&](const SampleRecord& r, int64_t overlap) {
      CHECK(overlap <= r.weight_ns);
      got += overlap;
      got_count += overlap > 0 ? 1 : 0;
    });
    CHECK(got == want);
    CHECK(got_count == want_count);
  }
}

TEST_CASE("sample log cut at every byte of its last chunk keeps everything before the cut", "[sample_log]") {
  TempDir dir;
  fs::path file = dir.path / "samples.log";
  std::vector<size_t> chunk_ends;
  auto expected = write_random_log(file, 120, chunk_ends, 5);
  REQUIRE(chunk_ends.size() >= 2);
  std::string bytes = read_file(file);
  size_t last_begin = chunk_ends[chunk_ends.size() - 2];
  size_t complete_chunks = chunk_ends.size() - 1;
  size_t before = 0;
  for (const auto& e : expected) before += e.chunk < complete_chunks ? 1 : 0;

  for (size_t cut = last_begin; cut < bytes.size(); ++cut) {
    auto log = SampleLog::parse(bytes.substr(0, cut));
    REQUIRE(log.ok());
    REQUIRE(log->sample_count() == before);
    REQUIRE(log->trailing_bytes() == cut - last_begin);
    auto got = read_back(*log);
    REQUIRE(got.size() == before);
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(same(got[i], expected[i]));
  }
  auto whole = SampleLog::parse(bytes);
  REQUIRE(whole.ok());
  CHECK(whole->sample_count() == expected.size());
}

TEST_CASE("sample log cut anywhere or corrupted never fails past its header", "[sample_log]") {
  TempDir dir;
  fs::path file = dir.path / "samples.log";
  std::vector<size_t> chunk_ends;
  auto expected = write_random_log(file, 160, chunk_ends, 9);
  REQUIRE(chunk_ends.size() >= 4);  // a skipped chunk with more than one after it
  std::string bytes = read_file(file);
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    auto log = SampleLog::parse(bytes.substr(0, cut));
    REQUIRE(log.ok());
    size_t chunks = 0;
    for (size_t end : chunk_ends) chunks += end <= cut ? 1 : 0;
    CHECK(log->chunk_count() <= chunks);
    (void)read_back(*log);
  }
  // Flip one bit per position: the chunk holding it is skipped and reading goes on at the next
  // one (the last chunk has no next one: it is dropped as a corrupt tail).
  for (size_t pos = 16; pos < bytes.size(); pos += 7) {
    std::string bad = bytes;
    bad[pos] = char(bad[pos] ^ 0x10);
    auto log = SampleLog::parse(bad);
    REQUIRE(log.ok());
    size_t chunk = 0;
    for (size_t end : chunk_ends) chunk += end <= pos ? 1 : 0;
    size_t chunk_begin = chunk == 0 ? 16 : chunk_ends[chunk - 1];
    std::vector<Expected> kept;
    for (const auto& e : expected) {
      if (e.chunk != chunk) kept.push_back(e);
    }
    if (chunk + 1 == chunk_ends.size()) {
      CHECK(log->trailing_bytes() == bytes.size() - chunk_begin);
      CHECK(log->skipped_chunks() == 0);
    } else {
      CHECK(log->trailing_bytes() == 0);
      CHECK(log->skipped_chunks() == 1);
      CHECK(log->skipped_bytes() == chunk_ends[chunk] - chunk_begin);
      CHECK(log->lost_samples() == expected.size() - kept.size());
    }
    auto got = read_back(*log);
    REQUIRE(got.size() == kept.size());
    for (size_t i = 0; i < got.size(); ++i) {
      REQUIRE(got[i].time_ns == kept[i].time_ns);
      REQUIRE(got[i].weight_ns == kept[i].weight_ns);
      REQUIRE(got[i].flags == kept[i].flags);
      // What the skipped chunk defined (a function, a frame, the outer part of a stack, a thread)
      // reads as the stand-in; all else as written.
      const auto& frames = got[i].frames;
      bool stand_in = false;
      for (size_t f = 0; f < frames.size(); ++f) {
        if (frames[f].find("<lost in a corrupt chunk") == 0) {
          stand_in = true;
          continue;
        }
        REQUIRE(f < kept[i].frames.size());
        REQUIRE(frames[f] == kept[i].frames[f]);
      }
      if (!stand_in) REQUIRE(frames == kept[i].frames);
      if (got[i].python_thread_id != 0) REQUIRE(got[i].python_thread_id == kept[i].python_thread_id);
    }
  }
}

namespace {

uint64_t take_varint(const std::string& b, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    auto byte = uint8_t(b[at++]);
    v |= uint64_t(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return v;
  }
}

uint32_t crc32_of(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (char ch : data) {
    crc ^= uint8_t(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
}

// The same log in format version 1: chunk headers without the seven counts of version 2.
std::string as_version_1(const std::string& v2) {
  std::string out = v2.substr(0, 8);
  put_le32(out, 1);
  put_le32(out, 16);
  size_t pos = 16;
  while (pos < v2.size()) {
    uint32_t length = uint8_t(v2[pos + 4]) | uint32_t(uint8_t(v2[pos + 5])) << 8 | uint32_t(uint8_t(v2[pos + 6])) << 16 |
                      uint32_t(uint8_t(v2[pos + 7])) << 24;
    std::string body = v2.substr(pos + 12, length);
    size_t at = 0;
    for (int i = 0; i < 4; ++i) take_varint(body, at);
    size_t counts_begin = at;
    for (int i = 0; i < 7; ++i) take_varint(body, at);
    std::string v1 = body.substr(0, counts_begin) + body.substr(at);
    out += "SPCK";
    put_le32(out, uint32_t(v1.size()));
    put_le32(out, crc32_of(v1));
    out += v1;
    pos += 12 + length;
  }
  return out;
}

}  // namespace

TEST_CASE("sample log version 1 still reads, and stops at a corrupt chunk", "[sample_log]") {
  TempDir dir;
  fs::path file = dir.path / "samples.log";
  std::vector<size_t> chunk_ends;
  auto expected = write_random_log(file, 160, chunk_ends, 13);
  REQUIRE(chunk_ends.size() >= 3);
  std::string v1 = as_version_1(read_file(file));
  auto log = SampleLog::parse(v1);
  REQUIRE(log.ok());
  CHECK(log->format_version() == 1);
  auto got = read_back(*log);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(same(got[i], expected[i]));

  // A bad byte in the first chunk's body: version 1 cannot resume, everything after is dropped.
  v1[16 + 12 + 3] = char(v1[16 + 12 + 3] ^ 0x01);
  auto bad = SampleLog::parse(v1);
  REQUIRE(bad.ok());
  CHECK(bad->sample_count() == 0);
  CHECK(bad->skipped_chunks() == 0);
  CHECK(bad->trailing_bytes() == v1.size() - 16);
}

TEST_CASE("sample log rejects other files", "[sample_log]") {
  CHECK_FALSE(SampleLog::parse("this is not a log at all").ok());
  auto empty = SampleLog::parse("");
  REQUIRE(empty.ok());
  CHECK(empty->sample_count() == 0);
  auto version = SampleLog::parse(std::string("SPROFLOG\x09\0\0\0\x10\0\0\0", 16));
  REQUIRE_FALSE(version.ok());
  CHECK(version.error().kind == sprof::ErrorKind::unsupported);
  TempDir dir;
  CHECK(SampleLog::open(dir.path / "missing.log").error().kind == sprof::ErrorKind::bad_input);
  auto w = SampleLogWriter::create(dir.path / "a.log");
  REQUIRE(w.ok());
  CHECK_FALSE(SampleLogWriter::create(dir.path / "a.log").ok());  // never overwrites
}

TEST_CASE("sample log: hidden functions leave every stack, samples keep their place", "[sample_log]") {
  TempDir dir;
  fs::path file = dir.path / "samples.log";
  std::vector<size_t> chunk_ends;
  auto expected = write_random_log(file, 400, chunk_ends, 11);
  auto log = SampleLog::open(file);
  REQUIRE(log.ok());
  const std::string hidden_file = "threading.py";
  size_t hidden = log->hide_functions([&](const sprof::store::LogFunction& f) { return f.file == hidden_file; });
  CHECK(hidden == 6);  // every name was interned with that file
  auto got = read_back(*log);
  REQUIRE(got.size() == expected.size());
  size_t changed = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    std::vector<std::string> visible;
    for (const auto& f : expected[i].frames) {
      if (f.find(" " + hidden_file + ":") == std::string::npos) visible.push_back(f);
    }
    changed += visible.size() != expected[i].frames.size();
    INFO("sample " << i);
    CHECK(got[i].frames == visible);
    CHECK(got[i].time_ns == expected[i].time_ns);
  }
  CHECK(changed > 0);
  // One node per distinct visible stack: no two nodes with the same parent and frame.
  std::set<std::pair<uint32_t, uint32_t>> nodes;
  for (size_t id = 1; id < log->stack_nodes().size(); ++id) {
    CHECK(nodes.insert({log->stack_nodes()[id].parent, log->stack_nodes()[id].frame}).second);
    CHECK(log->stack_nodes()[id].parent < id);
  }
}
