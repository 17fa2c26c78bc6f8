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
// when the target is running, every frame's caller and code are re-read after the walk (or, for
// frames prefetched with a second copy, taken from that copy) and must be unchanged (else the
// walk may have mixed two stacks: it is retried).

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
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

  // What the caller read for several threads in one batch, so that a sample needs fewer
  // syscalls: the current frame (3.11/3.12, behind the cframe pointer) and the start of the
  // newest datastack chunk.
  //
  // Also the frames the previous walk of this thread had to read one by one (heap frame objects
  // up to 3.10, generator and C-stack entry frames from 3.11), speculatively: a walk that meets
  // one of these addresses uses the batch's copy instead of another syscall. An unchanged stack
  // of a sleeping thread then costs one batch in all.
  struct Prefetch {
    bool has_leaf = false;
    uint64_t leaf = 0;
    std::vector<uint8_t> chunk;        // empty: not prefetched
    // Frames outside the chunks (all of them up to 3.10): ascending, nearby ones in one region.
    std::vector<uint64_t> frames;
    std::vector<size_t> frame_at;      // each one's offset in frame_bytes
    std::vector<size_t> frame_region;  // and its region
    std::vector<RemoteMemory::Region> regions;
    std::vector<size_t> region_order;  // the order the regions are read in: the leaf's first
    std::vector<uint8_t> region_read;  // per region: the batch read it
    std::vector<uint8_t> frame_bytes;
    // The same regions copied again at the end of the same batch: a walk that finds every frame
    // here checks its links against this copy instead of reading them again afterwards (a busy
    // thread's frame objects are freed and reused, in another order, within microseconds).
    std::vector<uint8_t> frame_bytes_again;
    bool again_read = false;
    // The headers of the code objects the previous walk met (ascending), read between the two
    // copies of the frames: a frame equal in both copies held its code object all along, so
    // the header read between them is that code object's (see finish()).
    std::vector<uint64_t> codes;
    std::vector<size_t> code_at;  // each one's offset in code_bytes
    std::vector<RemoteMemory::Region> code_regions;
    std::vector<uint8_t> code_bytes;
    bool codes_read = false;
    // Plans reading the frames at `addresses` (walk order, leaf first): one piece per region,
    // the leaf's region first (right after the thread state, whose frame it must match), then
    // the headers of `code_addresses` (ascending; code_size bytes each), then the frames' pieces
    // again into frame_bytes_again; returns how many pieces it appended.
    size_t plan_frames(std::span<const uint64_t> addresses, size_t frame_size, std::span<const uint64_t> code_addresses,
                       size_t code_size, std::vector<RemoteMemory::Piece>& pieces);
    // The batch read the first `read` of those pieces.
    void frames_done(size_t read) {
      region_read.assign(regions.size(), 0);
      for (size_t k = 0; k < std::min(read, regions.size()); ++k) region_read[region_order[k]] = 1;
      codes_read = !codes.empty() && read >= regions.size() + code_regions.size();
      again_read = !regions.empty() && read == 2 * regions.size() + code_regions.size();
    }
    // The prefetched bytes of the frame at `address` (and its second copy, when read), or null.
    const uint8_t* frame(uint64_t address, const uint8_t** again) const;
    // The prefetched header of the code object at `address`, or null.
    const uint8_t* code(uint64_t address) const;
    void clear() {
      has_leaf = false;
      chunk.clear();
      frames.clear();
      regions.clear();
      region_read.clear();
      again_read = false;
      codes.clear();
      code_regions.clear();
      codes_read = false;
    }
  };
  size_t frame_read_size() const;
  // Frames this reader read one by one during its last walk (to prefetch next time).
  const std::vector<uint64_t>& direct_frames() const { return direct_frames_; }
  // The code objects of the frames its last finished walk read outside the datastack chunks
  // (ascending): their headers can come with those frames in the next prefetch batch.
  const std::vector<uint64_t>& direct_codes() const { return direct_codes_; }
  // Where the current-frame pointer of the thread is, when it is not inside the thread state
  // itself (3.11/3.12: in the _PyCFrame); 0 otherwise.
  uint64_t leaf_pointer_address(const std::vector<uint8_t>& ts) const;
  // How many bytes of the newest datastack chunk to copy (0: none), and from where.
  uint64_t first_chunk_address(const std::vector<uint8_t>& ts) const;
  size_t first_chunk_bytes(const std::vector<uint8_t>& ts) const;

  // `ts` holds layout.ts_size bytes of a thread state. On ok, `out.frames` (leaf first) and
  // `out.truncated` are set. `changed`: the stack moved under the walk (retry). `verify`: re-read
  // the chain's links afterwards (needed unless the thread is paused). `prefetch` (optional) is
  // consumed.
  Outcome read(const std::vector<uint8_t>& ts, bool verify, ThreadStack& out, Prefetch* prefetch = nullptr);

  // Why the last read was not ok (for -v logs and tests).
  const char* reason() const { return reason_; }

 private:
  struct Raw {
    uint64_t frame;  // address of the frame
    uint64_t code;
    int64_t position;  // f_lasti (<= 3.10) or instruction pointer (3.11+)
    bool direct;       // read outside the datastack chunks (a frame object, a generator's frame)
    bool both_copies;  // taken from the prefetch batch, which read it twice (no recheck)
  };
  struct Chunk {
    uint64_t address;
    uint64_t size;               // the chunk's size from its header
    std::vector<uint8_t> bytes;  // copied prefix (what the stack uses), extended on demand
  };

  Outcome walk_frame_objects(uint64_t frame);
  Outcome walk_interpreter_frames(uint64_t frame, const std::vector<uint8_t>& ts, Prefetch* prefetch);
  bool copy_chunks(uint64_t chunk, uint64_t top, Prefetch* prefetch);
  bool extend(Chunk& c, uint64_t length);
  const uint8_t* frame_bytes(uint64_t address, int& chunk_index);
  const uint8_t* direct_frame(uint64_t address);
  Outcome finish(bool verify, ThreadStack& out);
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
  Prefetch* prefetch_ = nullptr;  // of the current read
  std::vector<uint64_t> direct_frames_;
  // Every frame of the chain as walked, to check after the walk that none of them changed.
  struct Link {
    uint64_t address;
    int chunk;  // index into chunks_, -1 when read directly
    uint64_t previous;
    uint64_t code;
    const uint8_t* again;  // the frame's second copy from the prefetch batch, if it has one
  };
  const uint8_t* direct_again_ = nullptr;  // of the frame direct_frame() returned last
  std::vector<Link> chain_;
  std::vector<uint8_t> recheck_;
  std::vector<size_t> recheck_at_;  // per chain_ entry: offset of its link fields in recheck_
  struct Span {
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t at = 0;
  };
  std::vector<Span> chunk_spans_;                         // per chunk: its chain frames
  std::vector<std::pair<uint64_t, size_t>> direct_links_;  // (link address, chain_ index)
  std::vector<uint64_t> link_addresses_;
  std::vector<RemoteMemory::Region> link_regions_;
  std::vector<size_t> link_offsets_;
  // The frames met in this walk (a cycle means a torn read): open addressing with a generation
  // per walk, so that a walk neither clears a table nor allocates a node per frame.
  class FrameSet {
   public:
    void clear();
    bool insert(uint64_t address);  // false when already there (or, never in practice, full)

   private:
    static constexpr size_t kSlots = 2 * kMaxFrames;  // a walk stops at kMaxFrames frames
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> gens_;
    uint32_t gen_ = 0;
    size_t size_ = 0;
  };
  FrameSet seen_;
  std::vector<uint64_t> code_addresses_;
  std::vector<uint8_t> code_headers_;
  std::vector<const CodeRecord*> records_;  // per code_addresses_ entry
  size_t code_index(uint64_t code) const {
    return static_cast<size_t>(std::lower_bound(code_addresses_.begin(), code_addresses_.end(), code) -
                               code_addresses_.begin());
  }
  std::vector<uint64_t> direct_codes_;
  std::vector<uint8_t> vouched_;          // per code_addresses_ entry: every frame holding it read twice
  std::vector<const uint8_t*> headers_;  // per code_addresses_ entry
  std::vector<uint64_t> unread_codes_;    // code_addresses_ entries the prefetch did not vouch for
  std::vector<size_t> unread_at_;         // their indices
  std::vector<RemoteMemory::Region> code_regions_;
  std::vector<size_t> code_offsets_;  // per unread_codes_ entry: its header in code_headers_
  std::vector<RemoteMemory::Piece> pieces_;
};

}  // namespace sprof::pyframes
