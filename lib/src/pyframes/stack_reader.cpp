#include "pyframes/stack_reader.hpp"

#include <algorithm>
#include <cstring>

namespace sprof::pyframes {
namespace {

constexpr size_t kChunkGuess = 16 * 1024;           // CPython's DATA_STACK_CHUNK_SIZE
constexpr uint64_t kMaxChunkSize = 64ull << 20;     // larger is a torn read
constexpr size_t kMaxChunks = 256;
constexpr uint64_t kMaxChunkBytes = 256ull << 20;

// Owner values of _PyInterpreterFrame (3.11+).
constexpr uint8_t kOwnedByThread = 0;
constexpr uint8_t kOwnedByGenerator = 1;
constexpr uint8_t kOwnedByCStack = 3;  // 3.12+: entry/trampoline frames on the C stack

}  // namespace

StackReader::Outcome StackReader::read(uint64_t ts_address, const std::vector<uint8_t>& ts, bool verify,
                                       ThreadStack& out) {
  raw_.clear();
  truncated_ = false;
  reason_ = "";
  out.frames.clear();
  out.truncated = false;

  uint64_t pointer_address = 0;  // where the thread's current-frame pointer lives
  uint64_t leaf = 0;
  Outcome walked = Outcome::ok;
  switch (layout_.frame_model) {
    case FrameModel::frame_objects:
      pointer_address = ts_address + layout_.ts_frame;
      leaf = load_u64(ts, layout_.ts_frame);
      if (leaf == 0) return Outcome::ok;
      walked = walk_frame_objects(leaf);
      break;
    case FrameModel::cframe: {
      uint64_t cframe = load_u64(ts, layout_.ts_cframe);
      if (cframe == 0) return Outcome::ok;
      pointer_address = cframe + layout_.cframe_current_frame;
      if (!mem_.read_value(pointer_address, leaf)) return verify ? Outcome::changed : fail("unreadable cframe");
      if (leaf == 0) return Outcome::ok;
      walked = walk_interpreter_frames(leaf, ts);
      break;
    }
    case FrameModel::current_frame:
      pointer_address = ts_address + layout_.ts_current_frame;
      leaf = load_u64(ts, layout_.ts_current_frame);
      if (leaf == 0) return Outcome::ok;
      walked = walk_interpreter_frames(leaf, ts);
      break;
  }
  if (walked != Outcome::ok) return walked;
  return finish(pointer_address, verify, out);
}

StackReader::Outcome StackReader::walk_frame_objects(uint64_t frame) {
  seen_.clear();
  direct_.resize(layout_.frame_read_size);
  while (frame != 0) {
    if (raw_.size() >= kMaxFrames) {
      truncated_ = true;
      break;
    }
    if (!seen_.insert(frame).second) return fail("cycle in the frame chain");
    if (!mem_.read(frame, direct_.data(), direct_.size())) return fail("unreadable frame");
    const uint8_t* p = direct_.data();
    int64_t refcount = load<int64_t>(p, 0);
    if (refcount <= 0 || refcount > (int64_t{1} << 40)) return fail("freed frame object");
    if (types_.frame != 0 && load<uint64_t>(p, 8) != types_.frame) return fail("not a frame object");
    // Callers of a running frame are executing too; a frame that is not was freed or reused.
    if (!raw_.empty()) {
      int8_t state = load<int8_t>(p, layout_.f_state);
      bool executing = layout_.f_state_is_executing_flag ? state == 1 : state == 0;
      if (!executing) return fail("caller frame not executing");
    } else {
      leaf_.assign(direct_.begin(), direct_.end());
    }
    raw_.push_back({frame, load<uint64_t>(p, layout_.f_code), load<int32_t>(p, layout_.f_lasti)});
    frame = load<uint64_t>(p, layout_.f_back);
  }
  return Outcome::ok;
}

bool StackReader::copy_chunks(uint64_t chunk) {
  chunk_count_ = 0;
  uint64_t total = 0;
  while (chunk != 0 && chunk_count_ < kMaxChunks && total < kMaxChunkBytes) {
    if (chunk_count_ == chunks_.size()) chunks_.emplace_back();
    Chunk& c = chunks_[chunk_count_];
    c.address = chunk;
    c.bytes.resize(kChunkGuess);
    size_t got = mem_.read_partial(chunk, c.bytes.data(), c.bytes.size());
    if (got < layout_.chunk_data) return false;
    uint64_t size = load<uint64_t>(c.bytes.data(), layout_.chunk_size);
    if (size < layout_.chunk_data || size > kMaxChunkSize) return false;
    if (size > got) {
      if (got < kChunkGuess) return false;
      c.bytes.resize(size);
      if (!mem_.read(chunk + got, c.bytes.data() + got, size - got)) return false;
    } else {
      c.bytes.resize(size);
    }
    total += size;
    chunk = load<uint64_t>(c.bytes.data(), layout_.chunk_previous);
    ++chunk_count_;
  }
  return true;
}

const uint8_t* StackReader::frame_bytes(uint64_t address, int& chunk_index) {
  for (size_t i = 0; i < chunk_count_; ++i) {
    const Chunk& c = chunks_[i];
    if (address >= c.address + layout_.chunk_data && address + layout_.iframe_size <= c.address + c.bytes.size()) {
      chunk_index = static_cast<int>(i);
      return c.bytes.data() + (address - c.address);
    }
  }
  chunk_index = -1;
  direct_.resize(layout_.iframe_size);
  if (!mem_.read(address, direct_.data(), direct_.size())) return nullptr;
  return direct_.data();
}

StackReader::Outcome StackReader::walk_interpreter_frames(uint64_t frame, const std::vector<uint8_t>& ts) {
  if (!copy_chunks(load_u64(ts, layout_.ts_datastack_chunk))) return fail("unreadable datastack chunk");
  seen_.clear();
  int last_chunk = -1;
  uint64_t last_address = 0;
  bool leaf = true;
  while (frame != 0) {
    if (raw_.size() >= kMaxFrames) {
      truncated_ = true;
      break;
    }
    int chunk_index = -1;
    const uint8_t* p = frame_bytes(frame, chunk_index);
    if (p == nullptr) return fail("unreadable frame");
    uint8_t owner = p[layout_.if_owner];
    if (owner == kOwnedByThread) {
      // Thread-owned frames live in the datastack; walking outwards goes down the stack.
      if (chunk_index < 0) return fail("thread frame outside the datastack");
      if (last_chunk >= 0 && (chunk_index < last_chunk || (chunk_index == last_chunk && frame >= last_address))) {
        return fail("frames out of stack order");
      }
      last_chunk = chunk_index;
      last_address = frame;
    } else if (owner == kOwnedByGenerator || (owner == kOwnedByCStack && layout_.minor >= 12)) {
      if (!seen_.insert(frame).second) return fail("cycle in the frame chain");
    } else {
      return fail("frame with an impossible owner");
    }
    if (leaf) {
      leaf_.assign(p, p + layout_.iframe_size);
      leaf = false;
    }
    uint64_t previous = load<uint64_t>(p, layout_.if_previous);
    if (owner != kOwnedByCStack) {
      uint64_t code = load<uint64_t>(p, layout_.if_code);
      if (layout_.minor >= 14) code &= ~uint64_t{3};  // tagged _PyStackRef
      raw_.push_back({frame, code, static_cast<int64_t>(load<uint64_t>(p, layout_.if_instr))});
    }
    if (previous == 0) {
      // Every thread's outermost frame is an entry frame: a chain that ends elsewhere was cut.
      bool entry = layout_.if_is_entry != kAbsent ? p[layout_.if_is_entry] != 0 : owner == kOwnedByCStack;
      if (!entry) return fail("stack does not end at an entry frame");
    }
    frame = previous;
  }
  return Outcome::ok;
}

StackReader::Outcome StackReader::finish(uint64_t pointer_address, bool verify, ThreadStack& out) {
  code_addresses_.clear();
  for (const Raw& r : raw_) code_addresses_.push_back(r.code);
  std::sort(code_addresses_.begin(), code_addresses_.end());
  code_addresses_.erase(std::unique(code_addresses_.begin(), code_addresses_.end()), code_addresses_.end());

  // One batch: the current-frame pointer and the leaf's links again (verify), then every
  // distinct code object's header.
  const bool objects = layout_.frame_model == FrameModel::frame_objects;
  uint64_t link_a = objects ? layout_.f_back : layout_.if_previous;
  uint64_t link_b = objects ? layout_.f_code : layout_.if_code;
  uint64_t link_lo = std::min(link_a, link_b);
  uint64_t link_size = std::max(link_a, link_b) + 8 - link_lo;
  uint64_t pointer_now = 0;
  uint8_t links_now[64] = {};
  if (link_size > sizeof(links_now)) link_size = 0;
  uint64_t leaf_address = raw_.empty() ? 0 : raw_.front().frame;

  std::vector<RemoteMemory::Piece> pieces;
  pieces.reserve(code_addresses_.size() + 2);
  code_headers_.resize(code_addresses_.size() * layout_.code_read_size);
  size_t first_code = 0;
  if (verify && leaf_address != 0) {
    pieces.push_back({pointer_address, &pointer_now, 8});
    pieces.push_back({leaf_address + link_lo, links_now, link_size});
    first_code = 2;
  }
  for (size_t i = 0; i < code_addresses_.size(); ++i) {
    pieces.push_back({code_addresses_[i], code_headers_.data() + i * layout_.code_read_size, layout_.code_read_size});
  }
  size_t got = mem_.read_batch(pieces);
  if (got < first_code) return Outcome::changed;
  if (first_code > 0) {
    bool same = pointer_now == leaf_address && leaf_.size() >= link_lo + link_size &&
                std::memcmp(links_now, leaf_.data() + link_lo, link_size) == 0;
    if (!same) {
      reason_ = "stack changed during the read";
      return Outcome::changed;
    }
  }
  if (got < pieces.size()) return fail("unreadable code object");

  std::vector<const CodeRecord*> records(code_addresses_.size());
  for (size_t i = 0; i < code_addresses_.size(); ++i) {
    const uint8_t* header = code_headers_.data() + i * layout_.code_read_size;
    if (types_.code != 0 && load<uint64_t>(header, layout_.objects.ob_type) != types_.code) {
      return fail("frame code is not a code object");
    }
    records[i] = codes_.resolve(code_addresses_[i], header);
    if (records[i] == nullptr) return fail("unreadable code object strings");
  }

  out.frames.reserve(raw_.size());
  for (const Raw& r : raw_) {
    size_t index = static_cast<size_t>(
        std::lower_bound(code_addresses_.begin(), code_addresses_.end(), r.code) - code_addresses_.begin());
    const CodeRecord& code = *records[index];
    if (code.hidden) continue;
    int64_t offset = 0;
    switch (layout_.line_format) {
      case LineTableFormat::lnotab_unsigned:
      case LineTableFormat::lnotab:
        offset = r.position;  // f_lasti in bytes
        break;
      case LineTableFormat::table_310:
        offset = r.position < 0 ? -1 : r.position * 2;  // f_lasti in code units
        break;
      case LineTableFormat::locations: {
        int64_t bytes = r.position - static_cast<int64_t>(r.code + layout_.co_code_adaptive);
        offset = bytes < 0 ? -1 : bytes / 2;
        if (bytes < -2 || (code.code_units >= 0 && offset > code.code_units)) {
          return fail("instruction pointer outside its code object");
        }
        break;
      }
    }
    int32_t line = code.lines.line_at(offset);
    out.frames.push_back(Frame{code.code_id, line == kNoLine ? code.first_line : line});
  }
  out.truncated = truncated_;
  return Outcome::ok;
}

}  // namespace sprof::pyframes
