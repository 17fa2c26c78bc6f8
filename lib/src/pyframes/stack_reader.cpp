#include "pyframes/stack_reader.hpp"

#include <algorithm>
#include <cstring>

namespace sprof::pyframes {
namespace {

constexpr size_t kChunkGuess = 16 * 1024;           // CPython's DATA_STACK_CHUNK_SIZE
constexpr size_t kSlack = 1024;                     // frames pushed after the thread state was read
constexpr uint64_t kMaxChunkSize = 64ull << 20;     // larger is a torn read
constexpr size_t kMaxChunks = 256;
constexpr uint64_t kMaxChunkBytes = 256ull << 20;

// Owner values of _PyInterpreterFrame (3.11+).
constexpr uint8_t kOwnedByThread = 0;
constexpr uint8_t kOwnedByGenerator = 1;
constexpr uint8_t kOwnedByCStack = 3;  // 3.12+: entry/trampoline frames on the C stack

}  // namespace

void StackReader::FrameSet::clear() {
  if (keys_.empty()) {
    keys_.assign(kSlots, 0);
    gens_.assign(kSlots, 0);
  }
  if (++gen_ == 0) {  // wrapped: stamps of 2^32 walks ago would look current
    std::fill(gens_.begin(), gens_.end(), 0);
    gen_ = 1;
  }
  size_ = 0;
}

bool StackReader::FrameSet::insert(uint64_t address) {
  static_assert((kSlots & (kSlots - 1)) == 0, "a power of two");
  if (size_ + 1 >= kSlots) return false;  // a walk is cut at kMaxFrames long before
  size_t i = static_cast<size_t>(((address >> 4) * 0x9E3779B97F4A7C15ull) >> 40) & (kSlots - 1);
  while (gens_[i] == gen_) {
    if (keys_[i] == address) return false;
    i = (i + 1) & (kSlots - 1);
  }
  gens_[i] = gen_;
  keys_[i] = address;
  ++size_;
  return true;
}

uint64_t StackReader::leaf_pointer_address(const std::vector<uint8_t>& ts) const {
  if (layout_.frame_model != FrameModel::cframe) return 0;
  uint64_t cframe = load_u64(ts, layout_.ts_cframe);
  return cframe == 0 ? 0 : cframe + layout_.cframe_current_frame;
}

uint64_t StackReader::first_chunk_address(const std::vector<uint8_t>& ts) const {
  if (layout_.ts_datastack_chunk == kAbsent) return 0;
  return load_u64(ts, layout_.ts_datastack_chunk);
}

size_t StackReader::frame_read_size() const {
  return layout_.frame_model == FrameModel::frame_objects ? layout_.frame_read_size : layout_.iframe_size;
}

size_t StackReader::Prefetch::plan_frames(std::span<const uint64_t> addresses, size_t frame_size,
                                          std::span<const uint64_t> code_addresses, size_t code_size,
                                          std::vector<RemoteMemory::Piece>& pieces) {
  frames.assign(addresses.begin(), addresses.end());
  std::sort(frames.begin(), frames.end());
  frames.erase(std::unique(frames.begin(), frames.end()), frames.end());
  frame_bytes.resize(RemoteMemory::merge_reads(frames, frame_size, regions, frame_at));
  frame_bytes_again.resize(frame_bytes.size());
  frame_region.clear();
  for (size_t r = 0; r < regions.size(); ++r) frame_region.resize(regions[r].objects_through, r);
  // Regions in the order the walk first needs them.
  region_order.clear();
  region_read.assign(regions.size(), 0);  // here: whether already ordered
  for (uint64_t address : addresses) {
    const size_t i = static_cast<size_t>(std::lower_bound(frames.begin(), frames.end(), address) - frames.begin());
    const size_t r = frame_region[i];
    if (!region_read[r]) {
      region_read[r] = 1;
      region_order.push_back(r);
    }
  }
  region_read.assign(regions.size(), 0);
  for (size_t r : region_order) pieces.push_back({regions[r].address, frame_bytes.data() + regions[r].at, regions[r].size});
  codes.assign(code_addresses.begin(), code_addresses.end());
  code_bytes.resize(RemoteMemory::merge_reads(codes, code_size, code_regions, code_at));
  for (const RemoteMemory::Region& r : code_regions) pieces.push_back({r.address, code_bytes.data() + r.at, r.size});
  for (size_t r : region_order) {
    pieces.push_back({regions[r].address, frame_bytes_again.data() + regions[r].at, regions[r].size});
  }
  again_read = false;
  codes_read = false;
  return 2 * regions.size() + code_regions.size();
}

const uint8_t* StackReader::Prefetch::code(uint64_t address) const {
  if (!codes_read) return nullptr;
  const auto it = std::lower_bound(codes.begin(), codes.end(), address);
  if (it == codes.end() || *it != address) return nullptr;
  return code_bytes.data() + code_at[static_cast<size_t>(it - codes.begin())];
}

const uint8_t* StackReader::Prefetch::frame(uint64_t address, const uint8_t** again) const {
  *again = nullptr;
  const auto it = std::lower_bound(frames.begin(), frames.end(), address);
  if (it == frames.end() || *it != address) return nullptr;
  const size_t i = static_cast<size_t>(it - frames.begin());
  if (region_read.size() != regions.size() || !region_read[frame_region[i]]) return nullptr;
  if (again_read) *again = frame_bytes_again.data() + frame_at[i];
  return frame_bytes.data() + frame_at[i];
}

// A frame outside the datastack chunks: from the prefetch batch when it read this address, else
// read now.
const uint8_t* StackReader::direct_frame(uint64_t address) {
  direct_frames_.push_back(address);
  direct_again_ = nullptr;
  if (prefetch_ != nullptr) {
    if (const uint8_t* p = prefetch_->frame(address, &direct_again_)) return p;
  }
  direct_.resize(frame_read_size());
  if (!mem_.read(address, direct_.data(), direct_.size())) return nullptr;
  return direct_.data();
}

size_t StackReader::first_chunk_bytes(const std::vector<uint8_t>& ts) const {
  uint64_t chunk = first_chunk_address(ts);
  if (chunk == 0) return 0;
  // Chunks are at least kChunkGuess bytes, so this never reads past the chunk.
  uint64_t top = load_u64(ts, layout_.ts_datastack_chunk + 8);
  if (top > chunk && top - chunk < kChunkGuess - kSlack) {
    return std::max<size_t>(top - chunk + kSlack, layout_.chunk_data);
  }
  return kChunkGuess;
}

StackReader::Outcome StackReader::read(const std::vector<uint8_t>& ts, bool verify, ThreadStack& out,
                                       Prefetch* prefetch) {
  raw_.clear();
  truncated_ = false;
  reason_ = "";
  prefetch_ = prefetch;
  direct_frames_.clear();
  chain_.clear();
  out.frames.clear();
  out.truncated = false;

  uint64_t leaf = 0;
  Outcome walked = Outcome::ok;
  switch (layout_.frame_model) {
    case FrameModel::frame_objects:
      leaf = load_u64(ts, layout_.ts_frame);
      if (leaf == 0) return Outcome::ok;
      walked = walk_frame_objects(leaf);
      break;
    case FrameModel::cframe: {
      uint64_t cframe = load_u64(ts, layout_.ts_cframe);
      if (cframe == 0) return Outcome::ok;
      if (prefetch != nullptr && prefetch->has_leaf) {
        leaf = prefetch->leaf;
      } else if (!mem_.read_value(cframe + layout_.cframe_current_frame, leaf)) {
        return verify ? Outcome::changed : fail("unreadable cframe");
      }
      if (leaf == 0) return Outcome::ok;
      walked = walk_interpreter_frames(leaf, ts, prefetch);
      break;
    }
    case FrameModel::current_frame:
      leaf = load_u64(ts, layout_.ts_current_frame);
      if (leaf == 0) return Outcome::ok;
      walked = walk_interpreter_frames(leaf, ts, prefetch);
      break;
  }
  if (walked != Outcome::ok) return walked;
  return finish(verify, out);
}

StackReader::Outcome StackReader::walk_frame_objects(uint64_t frame) {
  seen_.clear();
  while (frame != 0) {
    if (raw_.size() >= kMaxFrames) {
      truncated_ = true;
      break;
    }
    if (!seen_.insert(frame)) return fail("cycle in the frame chain");
    const uint8_t* p = direct_frame(frame);
    if (p == nullptr) return fail("unreadable frame");
    int64_t refcount = load<int64_t>(p, 0);
    // A leaf freed since the thread state was read (it returned a moment ago) still holds its
    // code, last instruction and caller, and counts when that caller is still running (checked
    // next); refusing it dropped most samples of functions that run for a few microseconds. A
    // frame on the free list links to another freed frame instead, or to none.
    const bool freed_leaf = refcount == 0 && raw_.empty() && load<uint64_t>(p, layout_.f_back) != 0;
    if ((refcount <= 0 && !freed_leaf) || refcount > (int64_t{1} << 40)) return fail("freed frame object");
    if (types_.frame != 0 && load<uint64_t>(p, 8) != types_.frame) return fail("not a frame object");
    // Callers of a running frame are executing too; a frame that is not was freed or reused.
    if (!raw_.empty() && layout_.f_state != kAbsent) {
      int8_t state = load<int8_t>(p, layout_.f_state);
      bool executing = layout_.f_state_is_executing_flag ? state == 1 : state == 0;
      if (!executing) return fail("caller frame not executing");
    }
    uint64_t back = load<uint64_t>(p, layout_.f_back);
    uint64_t code = load<uint64_t>(p, layout_.f_code);
    raw_.push_back({frame, code, load<int32_t>(p, layout_.f_lasti), true, direct_again_ != nullptr});
    chain_.push_back({frame, -1, back, code, direct_again_});
    frame = back;
  }
  return Outcome::ok;
}

// Copies the thread's datastack chunks (newest first), each up to the part in use: the newest
// up to the thread's datastack_top (plus slack for frames pushed since), older ones up to the
// `top` they saved when the next chunk was pushed.
bool StackReader::copy_chunks(uint64_t chunk, uint64_t top, Prefetch* prefetch) {
  chunk_count_ = 0;
  uint64_t total = 0;
  while (chunk != 0 && chunk_count_ < kMaxChunks && total < kMaxChunkBytes) {
    if (chunk_count_ == chunks_.size()) chunks_.emplace_back();
    Chunk& c = chunks_[chunk_count_];
    c.address = chunk;
    size_t want = kChunkGuess;
    if (chunk_count_ == 0 && top > chunk && top - chunk < kChunkGuess - kSlack) {
      want = std::max<size_t>(top - chunk + kSlack, layout_.chunk_data);  // as first_chunk_bytes()
    }
    size_t got = 0;
    if (chunk_count_ == 0 && prefetch != nullptr && !prefetch->chunk.empty()) {
      c.bytes.swap(prefetch->chunk);  // read already, in the caller's batch
      prefetch->chunk.clear();
      got = c.bytes.size();
    } else {
      c.bytes.resize(want);
      got = mem_.read_partial(chunk, c.bytes.data(), c.bytes.size());
    }
    if (got < layout_.chunk_data) return false;
    c.size = load<uint64_t>(c.bytes.data(), layout_.chunk_size);
    if (c.size < layout_.chunk_data || c.size > kMaxChunkSize) return false;
    c.bytes.resize(std::min<uint64_t>(got, c.size));
    if (chunk_count_ > 0) {
      uint64_t used = layout_.chunk_data + load<uint64_t>(c.bytes.data(), layout_.chunk_top) * 8;
      if (used > c.size) return false;
      if (used > c.bytes.size() && !extend(c, used)) return false;
    }
    total += c.bytes.size();
    chunk = load<uint64_t>(c.bytes.data(), layout_.chunk_previous);
    ++chunk_count_;
  }
  return true;
}

bool StackReader::extend(Chunk& c, uint64_t length) {
  size_t old = c.bytes.size();
  length = std::min(length, c.size);
  if (length <= old) return true;
  c.bytes.resize(length);
  if (mem_.read(c.address + old, c.bytes.data() + old, length - old)) return true;
  c.bytes.resize(old);
  return false;
}

const uint8_t* StackReader::frame_bytes(uint64_t address, int& chunk_index) {
  for (size_t i = 0; i < chunk_count_; ++i) {
    Chunk& c = chunks_[i];
    // Offsets, not end addresses: a torn frame pointer near 2^64 must not wrap past the checks.
    if (address < c.address + layout_.chunk_data) continue;
    uint64_t offset = address - c.address;
    if (offset > c.size || c.size - offset < layout_.iframe_size) continue;
    uint64_t end = offset + layout_.iframe_size;
    if (end > c.bytes.size() && (!extend(c, end + kSlack) || end > c.bytes.size())) return nullptr;
    chunk_index = static_cast<int>(i);
    return c.bytes.data() + (address - c.address);
  }
  chunk_index = -1;
  return direct_frame(address);
}

StackReader::Outcome StackReader::walk_interpreter_frames(uint64_t frame, const std::vector<uint8_t>& ts,
                                                          Prefetch* prefetch) {
  // datastack_top follows datastack_chunk in PyThreadState (3.11-3.13).
  uint64_t top = load_u64(ts, layout_.ts_datastack_chunk + 8);
  if (!copy_chunks(load_u64(ts, layout_.ts_datastack_chunk), top, prefetch)) return fail("unreadable datastack chunk");
  seen_.clear();
  int last_chunk = -1;
  uint64_t last_address = 0;
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
      if (!seen_.insert(frame)) return fail("cycle in the frame chain");
    } else {
      return fail("frame with an impossible owner");
    }
    uint64_t previous = load<uint64_t>(p, layout_.if_previous);
    chain_.push_back(
        {frame, chunk_index, previous, load<uint64_t>(p, layout_.if_code), chunk_index < 0 ? direct_again_ : nullptr});
    if (owner != kOwnedByCStack) {
      uint64_t code = load<uint64_t>(p, layout_.if_code);
      if (layout_.minor >= 14) code &= ~uint64_t{3};  // tagged _PyStackRef
      raw_.push_back(
          {frame, code, static_cast<int64_t>(load<uint64_t>(p, layout_.if_instr)), chunk_index < 0,
           chunk_index < 0 && direct_again_ != nullptr});
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

StackReader::Outcome StackReader::finish(bool verify, ThreadStack& out) {
  code_addresses_.clear();
  for (const Raw& r : raw_) code_addresses_.push_back(r.code);
  std::sort(code_addresses_.begin(), code_addresses_.end());
  code_addresses_.erase(std::unique(code_addresses_.begin(), code_addresses_.end()), code_addresses_.end());
  // Up to 3.10 every frame is read directly, so the set is the one just sorted; from 3.11 only
  // generator frames are, and there are few of them.
  size_t direct = 0;
  for (const Raw& r : raw_) direct += r.direct ? 1 : 0;
  if (direct == raw_.size()) {
    direct_codes_ = code_addresses_;
  } else {
    direct_codes_.clear();
    for (const Raw& r : raw_) {
      if (r.direct) direct_codes_.push_back(r.code);
    }
    if (direct > 1) {
      std::sort(direct_codes_.begin(), direct_codes_.end());
      direct_codes_.erase(std::unique(direct_codes_.begin(), direct_codes_.end()), direct_codes_.end());
    }
  }

  // Every code object's header, every sample: its address may hold another code object than at
  // the last one (see CodeCache). From the prefetch batch when every frame that holds it was read
  // twice there, equal both times (it held the code object all along, and its header was read
  // in between; unverified, the thread is paused and both copies were read after the pause);
  // else read now, right after the links are read again: a code object freed and replaced
  // within the microsecond between the two reads would be misnamed, but reading the headers
  // first delays the links' check, and a busy thread's stack then fails it more often (invalid
  // samples 7 % -> 11 % on a json loop at 1 kHz).
  headers_.assign(code_addresses_.size(), nullptr);
  if (prefetch_ != nullptr && prefetch_->codes_read) {
    vouched_.assign(code_addresses_.size(), 1);
    for (const Raw& r : raw_) {
      if (!r.both_copies) vouched_[code_index(r.code)] = 0;
    }
    for (size_t i = 0; i < code_addresses_.size(); ++i) {
      if (vouched_[i]) headers_[i] = prefetch_->code(code_addresses_[i]);
    }
  }
  unread_codes_.clear();
  unread_at_.clear();
  for (size_t i = 0; i < code_addresses_.size(); ++i) {
    if (headers_[i] != nullptr) continue;
    unread_codes_.push_back(code_addresses_[i]);
    unread_at_.push_back(i);
  }

  // One batch: every chain frame's links again (verify; not those of frames whose second copy
  // the prefetch batch holds: they are compared with it), then those headers (nearby ones in one
  // region: code compiled together lies together). The chain counts as one stack when no
  // frame's caller or code changed after it was copied: frames pushed or popped meanwhile above
  // it do not make it torn (it was the whole stack when its leaf was read), while a frame popped
  // and its slot reused shows as a changed link. So the current-frame pointer need not be
  // unchanged: a busy thread calls so often that requiring it dropped about a quarter of its
  // samples, and the dropped ones were those in short calls (a bias).
  const bool objects = layout_.frame_model == FrameModel::frame_objects;
  const uint64_t link_prev = objects ? layout_.f_back : layout_.if_previous;
  const uint64_t link_code = objects ? layout_.f_code : layout_.if_code;
  const uint64_t link_lo = std::min(link_prev, link_code);
  const uint64_t link_size = std::max(link_prev, link_code) + 8 - link_lo;
  const uint64_t frame_size = frame_read_size();

  std::vector<RemoteMemory::Piece>& pieces = pieces_;
  pieces.clear();
  if (verify && !chain_.empty()) {
    // Chunk frames: one piece per chunk, spanning the chain's frames in it; the others (frame
    // objects) by address, nearby ones in one region.
    recheck_at_.assign(chain_.size(), 0);
    chunk_spans_.assign(chunk_count_, Span{});
    direct_links_.clear();
    for (size_t i = 0; i < chain_.size(); ++i) {
      const Link& l = chain_[i];
      if (l.again != nullptr) continue;  // checked against its second copy
      if (l.chunk < 0) {
        direct_links_.push_back({l.address + link_lo, i});
        continue;
      }
      Span& sp = chunk_spans_[static_cast<size_t>(l.chunk)];
      sp.lo = std::min(sp.lo, l.address);
      sp.hi = std::max(sp.hi, l.address + frame_size);
    }
    size_t total = 0;
    for (Span& sp : chunk_spans_) {
      if (sp.hi == 0) continue;
      sp.at = total;
      total += sp.hi - sp.lo;
    }
    std::sort(direct_links_.begin(), direct_links_.end());
    link_addresses_.clear();
    for (const auto& link : direct_links_) link_addresses_.push_back(link.first);
    const size_t direct_at = total;
    total += RemoteMemory::merge_reads(link_addresses_, link_size, link_regions_, link_offsets_);
    for (size_t k = 0; k < direct_links_.size(); ++k) recheck_at_[direct_links_[k].second] = direct_at + link_offsets_[k];
    for (size_t i = 0; i < chain_.size(); ++i) {
      const Link& l = chain_[i];
      if (l.chunk >= 0 && l.again == nullptr) {
        const Span& sp = chunk_spans_[static_cast<size_t>(l.chunk)];
        recheck_at_[i] = sp.at + (l.address - sp.lo) + link_lo;
      }
    }
    recheck_.resize(total);
    for (const Span& sp : chunk_spans_) {
      if (sp.hi != 0) pieces.push_back({sp.lo, recheck_.data() + sp.at, sp.hi - sp.lo});
    }
    for (const RemoteMemory::Region& r : link_regions_) {
      pieces.push_back({r.address, recheck_.data() + direct_at + r.at, r.size});
    }
  }
  const size_t first_code = pieces.size();
  code_headers_.resize(
      RemoteMemory::merge_reads(unread_codes_, layout_.code_read_size, code_regions_, code_offsets_));
  for (const RemoteMemory::Region& r : code_regions_) {
    pieces.push_back({r.address, code_headers_.data() + r.at, r.size});
  }
  const size_t got = pieces.empty() ? 0 : mem_.read_batch(pieces);
  if (got < first_code) {
    reason_ = "stack changed during the read";
    return Outcome::changed;
  }
  if (verify && !chain_.empty()) {
    bool same = true;
    for (size_t i = 0; same && i < chain_.size(); ++i) {
      const Link& l = chain_[i];
      const uint8_t* now = l.again != nullptr ? l.again + link_lo : recheck_.data() + recheck_at_[i];
      same = load<uint64_t>(now, link_prev - link_lo) == l.previous && load<uint64_t>(now, link_code - link_lo) == l.code;
    }
    if (!same) {
      reason_ = "stack changed during the read";
      return Outcome::changed;
    }
  }
  if (got < pieces.size()) return fail("unreadable code object");

  for (size_t k = 0; k < unread_at_.size(); ++k) headers_[unread_at_[k]] = code_headers_.data() + code_offsets_[k];
  records_.resize(code_addresses_.size());
  for (size_t i = 0; i < code_addresses_.size(); ++i) {
    const uint8_t* header = headers_[i];
    if (types_.code != 0 && load<uint64_t>(header, layout_.objects.ob_type) != types_.code) {
      return fail("frame code is not a code object");
    }
    records_[i] = codes_.resolve(code_addresses_[i], header);
    if (records_[i] == nullptr) return fail("code object unreadable or changed while read");
  }

  out.frames.reserve(raw_.size());
  for (const Raw& r : raw_) {
    const CodeRecord& code = *records_[code_index(r.code)];
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
    int32_t line = code.line_at(offset);
    out.frames.push_back(Frame{code.code_id, line == kNoLine ? code.identity.first_line : line});
  }
  out.truncated = truncated_;
  return Outcome::ok;
}

}  // namespace sprof::pyframes
