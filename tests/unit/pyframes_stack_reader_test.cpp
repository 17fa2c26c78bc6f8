// The stack reader's checks on synthetic CPython 3.12 structures built in this process's own
// memory (process_vm_readv on our own pid): a good chain reads back, and each kind of torn or
// impossible chain is refused.

#include <unistd.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "pyframes/code_cache.hpp"
#include "pyframes/layout.hpp"
#include "pyframes/remote_memory.hpp"
#include "pyframes/stack_reader.hpp"

using namespace sprof::pyframes;

namespace {

uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

template <class T>
void put(std::vector<uint8_t>& buf, size_t offset, T value) {
  std::memcpy(buf.data() + offset, &value, sizeof(T));
}

// A fake 3.12 world: code objects, a datastack chunk, a C-stack entry frame, a thread state.
struct World {
  Layout layout = *static_layout(3, 12);
  uint8_t code_type_object[16] = {};  // stands in for PyCode_Type
  std::deque<std::vector<uint8_t>> objects;
  std::vector<uint8_t> chunk;
  std::vector<uint8_t> entry;   // owner-3 frame "on the C stack"
  std::vector<uint8_t> cframe;  // _PyCFrame: current_frame at 0
  std::vector<uint8_t> ts;

  World(size_t chunk_size = 16384) : chunk(chunk_size), entry(80), cframe(16), ts(layout.ts_size) {
    put<uint64_t>(chunk, layout.chunk_previous, 0);
    put<uint64_t>(chunk, layout.chunk_size, chunk_size);
    put<uint8_t>(entry, layout.if_owner, 3);
    put<uint64_t>(ts, layout.ts_cframe, addr(cframe.data()));
    put<uint64_t>(ts, layout.ts_datastack_chunk, addr(chunk.data()));
    put<uint64_t>(ts, layout.ts_datastack_chunk + 8, addr(chunk.data()) + chunk_size);
  }

  uint64_t str(const std::string& s) {
    auto& o = objects.emplace_back(layout.objects.ascii_size + s.size() + 1);
    put<int64_t>(o, layout.objects.unicode_length, static_cast<int64_t>(s.size()));
    put<uint32_t>(o, layout.objects.unicode_state, 0x20 | 0x40 | (1 << 2));  // compact ascii, kind 1
    std::memcpy(o.data() + layout.objects.ascii_size, s.data(), s.size());
    return addr(o.data());
  }
  uint64_t bytes(const std::vector<uint8_t>& b) {
    auto& o = objects.emplace_back(layout.objects.bytes_data + b.size() + 1);
    put<int64_t>(o, layout.objects.bytes_size, static_cast<int64_t>(b.size()));
    std::memcpy(o.data() + layout.objects.bytes_data, b.data(), b.size());
    return addr(o.data());
  }
  // A code object whose 8 code units are all on `first_line` + 1.
  uint64_t code(const std::string& name, int32_t first_line, const std::string& filename = "file.py") {
    return fill_code(objects.emplace_back(layout.code_read_size + 16), name, first_line, filename);
  }
  // A new code object at the address of `old` (freed, its memory reused), with new strings.
  void replace_code(uint64_t old, const std::string& name, int32_t first_line,
                    const std::string& filename = "file.py") {
    for (auto& o : objects) {
      if (addr(o.data()) == old) fill_code(o, name, first_line, filename);
    }
  }
  uint64_t fill_code(std::vector<uint8_t>& o, const std::string& name, int32_t first_line, const std::string& filename) {
    put<uint64_t>(o, layout.objects.ob_type, addr(code_type_object));
    put<int64_t>(o, layout.co_code_units, 8);
    put<uint64_t>(o, layout.co_filename, str(filename));
    put<uint64_t>(o, layout.co_name, str(name));
    put<uint64_t>(o, layout.co_qualname, str("Q." + name));
    put<int32_t>(o, layout.co_firstlineno, first_line);
    // One no-column entry (code 13) of 8 units, line delta +1 (signed varint 2).
    put<uint64_t>(o, layout.co_linetable, bytes({0x80 | (13 << 3) | 7, 0x02}));
    return addr(o.data());
  }
  // Thread-owned frame number `slot` in the chunk, executing code unit 3 of `code`.
  uint64_t frame(size_t slot, uint64_t code, uint64_t previous, uint8_t owner = 0) {
    size_t at = layout.chunk_data + slot * 80;
    put<uint64_t>(chunk, at + layout.if_code, code);
    put<uint64_t>(chunk, at + layout.if_previous, previous);
    put<uint64_t>(chunk, at + layout.if_instr, code + layout.co_code_adaptive + 6);
    put<uint8_t>(chunk, at + layout.if_owner, owner);
    return addr(chunk.data() + at);
  }
  void set_leaf(uint64_t leaf) { put<uint64_t>(cframe, 0, leaf); }
  uint64_t entry_frame() { return addr(entry.data()); }
};

size_t w_size(size_t frames) { return 24 + frames * 80 + 80; }

struct Reader {
  explicit Reader(World& world) : w(world) {}
  World& w;
  RemoteMemory mem{getpid()};
  CodeCache codes{w.layout, mem};
  StackReader reader{w.layout, mem, codes, TypeAddresses{addr(w.code_type_object), 0}};
  ThreadStack out;
  StackReader::Outcome read(bool verify = true) { return reader.read(w.ts, verify, out); }
};

}  // namespace

TEST_CASE("a good 3.12 chain reads back leaf first, without the entry frame", "[pyframes][stackreader]") {
  World w;
  uint64_t outer = w.code("outer", 10);
  uint64_t inner = w.code("inner", 20);
  uint64_t f0 = w.frame(0, outer, w.entry_frame());
  uint64_t f1 = w.frame(1, inner, f0);
  w.set_leaf(f1);
  Reader r(w);
  REQUIRE(r.read() == StackReader::Outcome::ok);
  REQUIRE(r.out.frames.size() == 2);
  CHECK(r.codes.info(r.out.frames[0].code_id).name == "Q.inner");
  CHECK(r.codes.info(r.out.frames[0].code_id).filename == "file.py");
  CHECK(r.out.frames[0].line == 21);
  CHECK(r.codes.info(r.out.frames[1].code_id).name == "Q.outer");
  CHECK(r.out.frames[1].line == 11);
  CHECK_FALSE(r.out.truncated);
}

// A module's code object is freed right after its import, and the next code object compiled
// often lands at its address: when that happens between two samples, the second must name the
// new code, however recently the address was on a stack (python -c's function once took the
// name of encodings/utf_8.py's <module> for a whole second this way).
TEST_CASE("a code object replaced at the same address between two samples is named anew", "[pyframes][stackreader]") {
  World w;
  uint64_t outer = w.code("outer", 10);
  uint64_t module = w.code("<module>", 1);
  uint64_t f0 = w.frame(0, outer, w.entry_frame());
  w.set_leaf(w.frame(1, module, f0));
  Reader r(w);
  r.codes.begin_sample();
  REQUIRE(r.read() == StackReader::Outcome::ok);
  REQUIRE(r.out.frames.size() == 2);
  CHECK(r.codes.info(r.out.frames[0].code_id).name == "Q.<module>");

  w.replace_code(module, "old_work", 2);
  w.set_leaf(w.frame(1, module, f0));  // the same frame slot, running the new code
  r.codes.begin_sample();
  r.out = ThreadStack{};
  REQUIRE(r.read() == StackReader::Outcome::ok);
  REQUIRE(r.out.frames.size() == 2);
  CHECK(r.codes.info(r.out.frames[0].code_id).name == "Q.old_work");
  CHECK(r.out.frames[0].line == 3);
  CHECK(r.codes.info(r.out.frames[1].code_id).name == "Q.outer");
}

// A frame popped and its code object freed between the frame's read and its header's, and
// another built at the same address meanwhile: a header copied halfway through the building
// holds fields of both (CI saw "odd (even.py:3)": the new name, the old file). The cache reads
// the header again after the strings, and a header that no longer holds names nothing.
TEST_CASE("a code header copied while a code object was built at its address names nothing", "[pyframes][stackreader]") {
  World w;
  uint64_t code = w.code("even", 10, "even.py");
  std::vector<uint8_t> before(w.layout.code_read_size);
  std::memcpy(before.data(), reinterpret_cast<const void*>(code), before.size());
  w.replace_code(code, "odd", 10, "odd.py");
  std::vector<uint8_t> now(w.layout.code_read_size);
  std::memcpy(now.data(), reinterpret_cast<const void*>(code), now.size());
  std::vector<uint8_t> torn = now;
  std::memcpy(torn.data() + w.layout.co_filename, before.data() + w.layout.co_filename, 8);

  RemoteMemory mem{getpid()};
  CodeCache codes{w.layout, mem};
  CHECK(codes.resolve(code, torn.data()) == nullptr);
  const CodeRecord* record = codes.resolve(code, now.data());
  REQUIRE(record != nullptr);
  CHECK(codes.info(record->code_id).name == "Q.odd");
  CHECK(codes.info(record->code_id).filename == "odd.py");
  // A header that still holds is named as before, and found again without a read.
  CHECK(codes.resolve(code, now.data()) == record);
  CHECK(codes.misses() == 2);
}

// The prefetch batch reads the headers of the code objects the last walk met outside the
// chunks between the two copies of those frames: a header counts only for a code object whose
// every frame was read twice there (it was held all along); any other is read afresh.
TEST_CASE("a prefetched code header names only code held by frames read twice around it", "[pyframes][stackreader]") {
  World w;
  uint64_t outer = w.code("outer", 10);
  uint64_t gen = w.code("gen", 20);
  uint64_t f0 = w.frame(0, outer, w.entry_frame());
  std::vector<uint8_t> g(w.layout.iframe_size + 16);  // a generator's frame, on the heap
  put<uint8_t>(g, w.layout.if_owner, 1);
  put<uint64_t>(g, w.layout.if_code, gen);
  put<uint64_t>(g, w.layout.if_instr, gen + w.layout.co_code_adaptive + 6);
  w.set_leaf(addr(g.data()));
  Reader r(w);
  // `done`: how many pieces of the batch count as read (all by default).
  auto prefetch_and_replace = [&](StackReader::Prefetch& p, size_t done = 3, bool replace = true) {
    std::vector<RemoteMemory::Piece> pieces;
    const std::vector<uint64_t> walk = {addr(g.data())}, codes = {gen};
    REQUIRE(p.plan_frames(walk, r.reader.frame_read_size(), codes, w.layout.code_read_size, pieces) == 3);
    CHECK(pieces[1].address == gen);  // between the frame's two copies
    REQUIRE(r.mem.read_batch(pieces) == 3);
    p.frames_done(done);
    CHECK(p.codes_read == (done >= 2));
    CHECK(p.again_read == (done == 3));
    // Changed after the batch: the prefetched header is the old one.
    if (replace) w.replace_code(gen, "other", 30);
  };
  // The stack read when the generator's caller runs `caller`.
  auto read = [&](uint64_t caller, size_t done = 3, bool replace = true) {
    put<uint64_t>(g, w.layout.if_previous, w.frame(1, caller, f0));
    StackReader::Prefetch p;
    prefetch_and_replace(p, done, replace);
    return r.reader.read(w.ts, true, r.out, &p);
  };
  auto names = [&](uint64_t caller, size_t done = 3, bool replace = true) {
    const auto outcome = read(caller, done, replace);
    INFO(r.reader.reason());
    REQUIRE(outcome == StackReader::Outcome::ok);
    std::vector<std::string> out;
    for (const Frame& f : r.out.frames) out.push_back(r.codes.info(f.code_id).name);
    return out;
  };
  using Names = std::vector<std::string>;

  SECTION("held only by the generator's frame: the prefetched header") {
    // It names the code as it was while the frame held it. Replaced since, its strings may be
    // gone with it: the header read again after them no longer holds, and the stack is torn
    // rather than named (read afresh, it would be "Q.other"; the next two sections).
    CHECK(read(outer) == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "code object unreadable or changed while read");
    // Still there after its strings: the prefetched header names it.
    w.replace_code(gen, "gen", 20);
    r.out = ThreadStack{};
    CHECK(names(outer, 3, false) == Names{"Q.gen", "Q.outer", "Q.outer"});
    CHECK(r.reader.direct_codes() == std::vector<uint64_t>{gen});
  }
  SECTION("held by a chunk frame too: read afresh") { CHECK(names(gen) == Names{"Q.other", "Q.other", "Q.outer"}); }
  SECTION("the batch stopped before the headers: read afresh") {
    CHECK(names(outer, 1) == Names{"Q.other", "Q.outer", "Q.outer"});  // only the frame's first copy read
  }
}

TEST_CASE("torn or impossible 3.12 chains are refused", "[pyframes][stackreader]") {
  World w;
  uint64_t code = w.code("f", 1);
  Reader r(w);

  SECTION("a caller above its callee in the datastack") {
    uint64_t f1 = w.frame(1, code, w.entry_frame());
    uint64_t f0 = w.frame(0, code, f1);
    w.frame(1, code, w.entry_frame());
    w.set_leaf(f0);
    CHECK(r.read() == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "frames out of stack order");
  }
  SECTION("a frame owned by a frame object (it returned) on the live chain") {
    uint64_t f0 = w.frame(0, code, w.entry_frame(), 2);
    w.set_leaf(w.frame(1, code, f0));
    CHECK(r.read() == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "frame with an impossible owner");
  }
  SECTION("a chain cut short: the outermost frame is not an entry frame") {
    uint64_t f0 = w.frame(0, code, 0);
    w.set_leaf(w.frame(1, code, f0));
    CHECK(r.read() == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "stack does not end at an entry frame");
  }
  SECTION("the frame's code is not a code object") {
    uint64_t fake = w.str("not code");
    w.set_leaf(w.frame(0, fake, w.entry_frame()));
    CHECK(r.read() == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "frame code is not a code object");
  }
  SECTION("an instruction pointer outside its code object") {
    uint64_t f0 = w.frame(0, code, w.entry_frame());
    put<uint64_t>(w.chunk, w.layout.chunk_data + w.layout.if_instr, code + w.layout.co_code_adaptive + 4096);
    w.set_leaf(f0);
    CHECK(r.read() == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "instruction pointer outside its code object");
  }
  SECTION("a torn caller pointer near 2^64 (its end wraps around) is not taken for a chunk frame") {
    uint64_t torn = ~uint64_t{0} - 15;
    w.set_leaf(w.frame(0, code, torn));
    CHECK(r.read() == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "unreadable frame");
  }
  SECTION("a torn frame pointer near 2^64 (its end address wraps around)") {
    w.set_leaf(~uint64_t{0} - 15);
    CHECK(r.read() == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "unreadable frame");
  }
  SECTION("a cycle through generator frames") {
    std::vector<uint8_t> g1(80), g2(80);
    put<uint8_t>(g1, w.layout.if_owner, 1);
    put<uint8_t>(g2, w.layout.if_owner, 1);
    put<uint64_t>(g1, w.layout.if_code, code);
    put<uint64_t>(g2, w.layout.if_code, code);
    put<uint64_t>(g1, w.layout.if_previous, addr(g2.data()));
    put<uint64_t>(g2, w.layout.if_previous, addr(g1.data()));
    w.set_leaf(addr(g1.data()));
    CHECK(r.read() == StackReader::Outcome::invalid);
    CHECK(std::string(r.reader.reason()) == "cycle in the frame chain");
  }
}

TEST_CASE("stacks deeper than the cap keep their innermost frames", "[pyframes][stackreader]") {
  const size_t depth = kMaxFrames + 100;
  World w(w_size(depth));  // one chunk holds them all
  uint64_t code = w.code("deep", 1);
  uint64_t previous = w.entry_frame();
  for (size_t i = 0; i < depth; ++i) previous = w.frame(i, code, previous);
  w.set_leaf(previous);
  Reader r(w);
  REQUIRE(r.read(false) == StackReader::Outcome::ok);
  CHECK(r.out.frames.size() == kMaxFrames);
  CHECK(r.out.truncated);
}

// The verify step: the walk uses a copy (the prefetch batch) and the live memory has moved on
// by the time the chain's links are read again.
TEST_CASE("a stack that moved during the read counts only if its frames did not change", "[pyframes][stackreader]") {
  World w;
  uint64_t outer = w.code("outer", 10);
  uint64_t inner = w.code("inner", 20);
  uint64_t other = w.code("other", 30);
  uint64_t f0 = w.frame(0, outer, w.entry_frame());
  uint64_t f1 = w.frame(1, inner, f0);
  w.set_leaf(f1);
  StackReader::Prefetch copy;
  copy.has_leaf = true;
  copy.leaf = f1;
  copy.chunk.assign(w.chunk.begin(), w.chunk.begin() + static_cast<long>(w.layout.chunk_data + 3 * 80));
  Reader r(w);
  auto read_copy = [&] { return r.reader.read(w.ts, true, r.out, &copy); };

  SECTION("unchanged: ok") { CHECK(read_copy() == StackReader::Outcome::ok); }
  SECTION("a call made since (the leaf pointer moved deeper): the copied stack, ok") {
    w.set_leaf(w.frame(2, other, f1));
    REQUIRE(read_copy() == StackReader::Outcome::ok);
    REQUIRE(r.out.frames.size() == 2);
    CHECK(r.codes.info(r.out.frames[0].code_id).name == "Q.inner");
  }
  SECTION("the leaf returned and its slot now holds another call: changed") {
    w.frame(1, other, f0);
    CHECK(read_copy() == StackReader::Outcome::changed);
    CHECK(std::string(r.reader.reason()) == "stack changed during the read");
  }
  SECTION("a caller replaced under the leaf (a torn copy): changed") {
    w.frame(0, other, w.entry_frame());
    CHECK(read_copy() == StackReader::Outcome::changed);
  }
}

TEST_CASE("nearby reads are merged into one region, far ones are not", "[pyframes][stackreader]") {
  std::vector<RemoteMemory::Region> regions;
  std::vector<size_t> offsets;
  const uint64_t a = 0x100000;
  const uint64_t far = a + 0x100 + 112 + RemoteMemory::kMergeGap + 1;
  const std::vector<uint64_t> addresses = {a, a + 0x100, far, far + 50, 0x900000};
  size_t total = RemoteMemory::merge_reads(addresses, 112, regions, offsets);
  REQUIRE(regions.size() == 3);
  CHECK(regions[0].address == a);
  CHECK(regions[0].size == 0x100 + 112);
  CHECK(regions[0].objects_through == 2);
  CHECK(regions[1].address == far);
  CHECK(regions[1].size == 50 + 112);  // overlapping objects: one copy
  CHECK(regions[1].objects_through == 4);
  CHECK(regions[2].objects_through == 5);
  CHECK(offsets == std::vector<size_t>{0, 0x100, 0x100 + 112, 0x100 + 112 + 50, 0x100 + 112 + 50 + 112});
  CHECK(total == 0x100 + 112 + 50 + 112 + 112);

  // Objects close to each other over a long stretch: regions stay within kMergeMax.
  std::vector<uint64_t> dense;
  for (uint64_t k = 0; k < 200; ++k) dense.push_back(a + k * 1024);
  RemoteMemory::merge_reads(dense, 112, regions, offsets);
  CHECK(regions.size() > 1);
  for (const auto& r : regions) CHECK(r.size <= RemoteMemory::kMergeMax);
}

TEST_CASE("prefetched frames: the leaf's region is read first, and a second copy follows", "[pyframes][stackreader]") {
  // Three "frames" in this process: two close together, the leaf far from them.
  std::vector<uint8_t> memory(256 * 1024);
  for (size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<uint8_t>(i * 7);
  const uint64_t caller = addr(memory.data()), callers_caller = addr(memory.data() + 200);
  const uint64_t leaf = addr(memory.data() + 200 * 1024);
  StackReader::Prefetch p;
  std::vector<RemoteMemory::Piece> pieces;
  const std::vector<uint64_t> walk = {leaf, caller, callers_caller};
  const size_t planned = p.plan_frames(walk, 112, {}, 0, pieces);
  REQUIRE(p.regions.size() == 2);
  REQUIRE(planned == 4);
  REQUIRE(pieces.size() == 4);
  CHECK(pieces[0].address == leaf);  // the leaf's region first, though it lies higher
  CHECK(pieces[1].address == caller);
  CHECK(pieces[2].address == leaf);
  CHECK(pieces[3].address == caller);

  RemoteMemory mem(getpid());
  SECTION("all read: each frame from the first copy, with its second") {
    p.frames_done(mem.read_batch(pieces));
    for (uint64_t f : walk) {
      const uint8_t* again = nullptr;
      const uint8_t* bytes = p.frame(f, &again);
      REQUIRE(bytes != nullptr);
      REQUIRE(again != nullptr);
      CHECK(std::memcmp(bytes, reinterpret_cast<const void*>(f), 112) == 0);
      CHECK(std::memcmp(again, reinterpret_cast<const void*>(f), 112) == 0);
    }
    const uint8_t* again = nullptr;
    CHECK(p.frame(leaf + 8, &again) == nullptr);  // not a planned frame
  }
  SECTION("the batch stopped after the leaf's region: no second copy, the callers are not there") {
    p.frames_done(1);
    const uint8_t* again = nullptr;
    CHECK(p.frame(leaf, &again) != nullptr);
    CHECK(again == nullptr);
    CHECK(p.frame(caller, &again) == nullptr);
  }
}
