#pragma once
// Reads one thread's Python stack from its PyThreadState and checks it for torn reads.
//
// <= 3.10 frames are heap PyFrameObjects, read one by one along f_back. 3.11+ frames live in the
// thread's datastack chunks, which are copied in bulk and walked locally; generator frames (on
// the heap) and 3.12+ entry frames (on the C stack) are read directly.
//
// Checks: every frame object / code object has the right type; frames are alive (refcount,
// executing state on <= 3.10; owner values on 3.11+); thread-owned 3.11+ frames lie inside the
// copied chunks, in stack order; no cycles; the outermost frame is an entry frame (3.11+); and,
// when the target is running, the thread's current frame is re-read after the walk and must be
// unchanged (else the walk may have mixed two stacks: it is retried).

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "pyframes/code_cache.hpp"
#include "pyframes/layout.hpp"
#include "pyframes/remote_memory.hpp"
#include "sprof/pyframes.hpp"

namespace sprof::pyframes {

// Deepest stack returned; deeper stacks keep their innermost frames and are marked truncated.
inline constexpr size_t kMaxFrames = 4096;

struct TypeAddresses {
  uint64_t code = 0;   // &PyCode_Type
  uint64_t frame = 0;  // &PyFrame_Type (<= 3.10 frames)
};

class StackReader {
 public:
  StackReader(const Layout& layout, const RemoteMemory& mem, CodeCache& codes, TypeAddresses types)
      : layout_(layout), mem_(mem), codes_(codes), types_(types) {}

  enum class Outcome { ok, changed, invalid };

  // `ts` holds layout.ts_size bytes of the thread state at `ts_address`. On ok, `out.frames`
  // (leaf first) and `out.truncated` are set. `changed`: the stack moved under the walk (retry).
  // `verify`: re-read the current frame afterwards (needed unless the thread is paused).
  Outcome read(uint64_t ts_address, const std::vector<uint8_t>& ts, bool verify, ThreadStack& out);

  // Why the last read was not ok (for -v logs and tests).
  const char* reason() const { return reason_; }

 private:
  struct Raw {
    uint64_t frame;  // address of the frame
    uint64_t code;
    int64_t position;  // f_lasti (<= 3.10) or instruction pointer (3.11+)
  };
  struct Chunk {
    uint64_t address;
    std::vector<uint8_t> bytes;
  };

  Outcome walk_frame_objects(uint64_t frame);
  Outcome walk_interpreter_frames(uint64_t frame, const std::vector<uint8_t>& ts);
  bool copy_chunks(uint64_t chunk);
  const uint8_t* frame_bytes(uint64_t address, int& chunk_index);
  Outcome finish(uint64_t pointer_address, bool verify, ThreadStack& out);
  Outcome fail(const char* why) {
    reason_ = why;
    return Outcome::invalid;
  }

  const Layout& layout_;
  const RemoteMemory& mem_;
  CodeCache& codes_;
  TypeAddresses types_;
  const char* reason_ = "";

  // Reused between calls so that a sample allocates nothing once warm.
  std::vector<Raw> raw_;
  bool truncated_ = false;
  std::vector<Chunk> chunks_;
  size_t chunk_count_ = 0;
  std::vector<uint8_t> direct_;  // one directly read frame
  std::vector<uint8_t> leaf_;    // leaf frame bytes as walked (compared on re-read)
  std::unordered_set<uint64_t> seen_;
  std::vector<uint64_t> code_addresses_;
  std::vector<uint8_t> code_headers_;
};

}  // namespace sprof::pyframes
