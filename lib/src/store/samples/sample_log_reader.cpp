// Sample-log reader. The whole file is read into memory (logs are a few bytes per sample); every
// complete chunk is checksummed and fully validated once at open, so iteration never meets bad
// bytes and can skip chunks outside a time range without decoding them.

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "sprof/sample_log.hpp"
#include "sprof/profile_files.hpp"
#include "store/codecs/crc32.hpp"
#include "store/samples/sample_log_format.hpp"

namespace sprof::store {

using namespace samplelog;

namespace {

// Monotonic microseconds stay far below this (it is 35 years); bounding them keeps every
// conversion to nanoseconds free of overflow on hostile input.
constexpr int64_t kMaxTimeUs = int64_t(1) << 50;

struct SampleSectionInfo {
  size_t threads = 0;
  size_t stacks = 0;
};

// Decodes one chunk's sample records; emit(record) for each. Returns false on malformed input.
// `emit` returning is all the control it has: callers filter by time themselves.
template <class Emit>
bool decode_samples(const char* begin, const char* end, int64_t first_us, const SampleSectionInfo& info,
                    std::vector<uint32_t>& last_stack, std::vector<std::pair<uint32_t, uint32_t>>& prev,
                    uint64_t& count, Emit&& emit) {
  Cursor c(begin, end);
  last_stack.assign(info.threads, UINT32_MAX);
  prev.clear();
  bool have_prev = false;
  int64_t t = first_us;
  count = 0;
  while (!c.done()) {
    uint8_t tag = 0;
    uint64_t dt = 0;
    if (!c.byte(tag) || !c.varint(dt)) return false;
    uint8_t kind = tag & ~kTickWeightBit;
    if (kind != kTickTag && kind != kTickRepeatTag) return false;
    if (dt > (uint64_t(1) << 40)) return false;  // > 12 days between two samples: corrupt
    uint64_t weight = dt;
    if ((tag & kTickWeightBit) != 0 && !c.varint(weight)) return false;
    if (weight > (uint64_t(1) << 40)) return false;
    t += int64_t(dt);
    if (t >= kMaxTimeUs) return false;
    if (kind == kTickTag) {
      uint64_t n = 0;
      if (!c.varint(n) || n > c.left()) return false;  // every entry takes at least one byte
      prev.clear();
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t key = 0;
        if (!c.varint(key)) return false;
        uint64_t thread = key >> 3;
        if (thread >= info.threads) return false;
        uint64_t stack = 0;
        if ((key & kEntrySameStack) != 0) {
          stack = last_stack[thread];
          if (stack == UINT32_MAX) return false;
        } else {
          if (!c.varint(stack) || stack >= info.stacks) return false;
          last_stack[thread] = uint32_t(stack);
        }
        prev.emplace_back(uint32_t(key & ~uint64_t(kEntrySameStack)), uint32_t(stack));
      }
      have_prev = true;
    } else if (!have_prev) {
      return false;
    }
    for (auto [key, stack] : prev) {
      SampleRecord r;
      r.time_ns = t * 1000;
      r.weight_ns = int64_t(weight) * 1000;
      r.thread = key >> 3;
      r.stack = stack;
      r.flags = uint8_t(key & (kSampleIdle | kSampleGil));
      emit(r);
    }
    count += prev.size();
  }
  return true;
}

}  // namespace

Result<SampleLog> SampleLog::open(const std::filesystem::path& file, const ProfileFiles& files) {
  SPROF_TRY(std::string bytes, read_all(files, file));
  return parse(std::move(bytes), file.string());
}

Result<SampleLog> SampleLog::parse(std::string bytes, std::string name) {
  SampleLog log;
  log.bytes_ = std::move(bytes);
  const std::string& b = log.bytes_;
  log.stack_nodes_.push_back({});  // stack 0: empty
  log.file_stack_count_ = 1;

  if (b.size() < kFileHeaderSize) {
    // A file cut inside its header (killed right after creation) holds no samples yet.
    if (std::memcmp(b.data(), kFileMagic, std::min(b.size(), sizeof kFileMagic)) == 0) {
      log.trailing_bytes_ = b.size();
      log.stop_reason_ = "file ends inside its header";
      return log;
    }
    return make_error(ErrorKind::bad_input, "{} is not a sprof sample log (too short)", name);
  }
  if (std::memcmp(b.data(), kFileMagic, sizeof kFileMagic) != 0) {
    return make_error(ErrorKind::bad_input, "{} is not a sprof sample log (bad magic)", name);
  }
  uint32_t version = get_u32(b.data() + 8);
  uint32_t header_size = get_u32(b.data() + 12);
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    return make_error(ErrorKind::unsupported, "{}: sample log format version {} is not supported (this sprof reads {} to {})",
                      name, version, kOldestFormatVersion, kFormatVersion);
  }
  if (header_size < kFileHeaderSize || header_size > b.size()) {
    return make_error(ErrorKind::bad_input, "{}: bad header size {}", name, header_size);
  }
  log.version_ = version;

  // Whether a whole chunk with a good checksum starts at `at`; its body length if so.
  auto sound_chunk = [&](size_t at, uint32_t& length) {
    if (b.size() - at < kChunkPrefixSize || std::memcmp(b.data() + at, kChunkMagic, sizeof kChunkMagic) != 0) {
      return false;
    }
    length = get_u32(b.data() + at + 4);
    return length <= kMaxChunkBody && b.size() - at - kChunkPrefixSize >= length &&
           crc32(b.data() + at + kChunkPrefixSize, length) == get_u32(b.data() + at + 8);
  };
  // Version 2 chunks say which ids they start at, so reading can resume at the next sound chunk
  // after a corrupt one; version 1 stops there.
  auto next_sound_chunk = [&](size_t from) -> size_t {
    if (version < 2) return b.size();
    std::string_view rest(b);
    for (size_t at = rest.find(std::string_view(kChunkMagic, sizeof kChunkMagic), from); at != std::string_view::npos;
         at = rest.find(std::string_view(kChunkMagic, sizeof kChunkMagic), at + 1)) {
      uint32_t length = 0;
      if (sound_chunk(at, length)) return at;
    }
    return b.size();
  };

  size_t pos = header_size;
  while (pos < b.size()) {
    std::string problem;
    uint32_t length = 0;
    if (b.size() - pos < kChunkPrefixSize) {
      problem = "file ends inside a chunk header";
    } else if (std::memcmp(b.data() + pos, kChunkMagic, sizeof kChunkMagic) != 0) {
      problem = fmt::format("bad chunk magic at byte {}", pos);
    } else if (length = get_u32(b.data() + pos + 4); length > kMaxChunkBody) {
      problem = fmt::format("implausible chunk length {} at byte {}", length, pos);
    } else if (b.size() - pos - kChunkPrefixSize < length) {
      problem = fmt::format("file ends inside the chunk at byte {}", pos);
    } else if (crc32(b.data() + pos + kChunkPrefixSize, length) != get_u32(b.data() + pos + 8)) {
      problem = fmt::format("checksum mismatch in the chunk at byte {}", pos);
    } else if (Status status = log.load_chunk(pos + kChunkPrefixSize, pos + kChunkPrefixSize + length); !status.ok()) {
      problem = fmt::format("malformed chunk at byte {}: {}", pos, status.error().message);
    }
    if (problem.empty()) {
      pos += kChunkPrefixSize + length;
      continue;
    }
    size_t next = next_sound_chunk(pos + 1);
    if (next >= b.size()) {
      log.stop_reason_ = problem;  // nothing sound after it: a torn or corrupt end
      break;
    }
    // A corrupt chunk in the middle: skip to the next sound one, which tells what was lost.
    ++log.skipped_chunks_;
    log.skipped_bytes_ += next - pos;
    log.gap_bytes_ += next - pos;
    if (log.skip_reason_.empty()) log.skip_reason_ = problem;
    log.resume_after_gap_ = true;
    pos = next;
  }
  log.trailing_bytes_ = b.size() - pos;
  log.fill_lost_definitions();
  return log;
}

void SampleLog::fill_lost_definitions() {
  if (lost_frames_.empty() && lost_stacks_.empty()) return;
  // One stand-in function and frame, after every real id, for what the skipped chunks defined.
  auto function = static_cast<uint32_t>(functions_.size());
  functions_.push_back({"<sprof>", "<lost in a corrupt chunk of the sample log>", 0});
  for (size_t frame : lost_frames_) frames_[frame].function = function;
  auto frame = static_cast<uint32_t>(frames_.size());
  frames_.push_back({function, 0});
  for (size_t stack : lost_stacks_) stack_nodes_[stack] = {0, frame};
}

Status SampleLog::load_chunk(size_t body_begin, size_t body_end) {
  // Tables grow as definitions are read; remember their sizes to roll back a bad chunk.
  const size_t n_processes = processes_.size(), n_strings = strings_.size(), n_functions = functions_.size(),
               n_frames = frames_.size(), n_threads = threads_.size(), n_nodes = stack_nodes_.size();
  std::vector<std::pair<size_t, std::string>> renamed;  // (thread, old name) for rollback
  const size_t n_lost_frames = lost_frames_.size(), n_lost_stacks = lost_stacks_.size();
  const uint64_t lost_samples = lost_samples_;
  const bool after_gap = resume_after_gap_;
  const uint64_t lost_processes = lost_processes_;
  const uint64_t gap_bytes = gap_bytes_;
  auto fail = [&](const char* what) -> Status {
    lost_frames_.resize(n_lost_frames);
    lost_stacks_.resize(n_lost_stacks);
    lost_samples_ = lost_samples;
    lost_processes_ = lost_processes;
    gap_bytes_ = gap_bytes;
    resume_after_gap_ = after_gap;
    processes_.resize(n_processes);
    strings_.resize(n_strings);
    functions_.resize(n_functions);
    frames_.resize(n_frames);
    threads_.resize(n_threads);
    stack_nodes_.resize(n_nodes);
    for (auto it = renamed.rbegin(); it != renamed.rend(); ++it) {
      if (it->first < threads_.size()) threads_[it->first].name = it->second;
    }
    return make_error(ErrorKind::bad_input, "{}", what);
  };

  const char* base = bytes_.data();
  Cursor c(base + body_begin, base + body_end);
  uint64_t defs_len = 0, span_us = 0, samples = 0;
  int64_t first_us = 0;
  if (!c.varint(defs_len) || !c.svarint(first_us) || !c.varint(span_us) || !c.varint(samples)) {
    return fail("truncated chunk header");
  }
  if (version_ >= 2) {
    ChunkStart start;
    if (!read_chunk_start(c, start)) return fail("truncated chunk header");
    const uint64_t have[] = {strings_.size(), functions_.size(), frames_.size(), stack_nodes_.size() - 1,
                             threads_.size(), processes_.size() + lost_processes_};
    const uint64_t want[] = {start.strings, start.functions, start.frames, start.stacks, start.threads, start.processes};
    uint64_t missing = 0;
    for (size_t i = 0; i < 6; ++i) {
      // More than this chunk expects, or (without a skipped chunk before it) a different count: corrupt.
      if (have[i] > want[i] || (!resume_after_gap_ && have[i] != want[i])) return fail("definition counts do not match");
      // Every definition takes at least a byte: the skipped bytes bound what can stand in, and
      // keep a forged count from allocating without end. Checked per count first, so that two
      // forged counts cannot wrap the sum round to a small number.
      uint64_t lost = want[i] - have[i];
      if (lost > gap_bytes_ || missing + lost > gap_bytes_) return fail("definition counts do not match");
      missing += lost;
    }
    if (start.samples < sample_count_) return fail("sample count before the chunk does not match");
    if (resume_after_gap_) {
      // Stand in for the definitions of the skipped chunks (fill_lost_definitions() names them).
      while (strings_.size() < start.strings) strings_.emplace_back("<lost>");
      while (functions_.size() < start.functions) functions_.push_back({"<sprof>", "<lost in a corrupt chunk of the sample log>", 0});
      while (frames_.size() < start.frames) {
        lost_frames_.push_back(frames_.size());
        frames_.push_back({0, 0});
      }
      while (stack_nodes_.size() - 1 < start.stacks) {
        lost_stacks_.push_back(stack_nodes_.size());
        stack_nodes_.push_back({0, 0});
      }
      while (threads_.size() < start.threads) threads_.push_back({0, 0, {}});
      lost_processes_ = start.processes - processes_.size();  // nothing to stand in with: counted
      lost_samples_ += start.samples - sample_count_;
      resume_after_gap_ = false;
      gap_bytes_ = 0;
    }
  }
  std::string_view defs;
  if (first_us < 0 || first_us >= kMaxTimeUs) return fail("chunk time out of range");
  if (defs_len > c.left() || !c.bytes(size_t(defs_len), defs)) return fail("definitions overrun the chunk");
  const char* samples_begin = defs.data() + defs.size();

  uint64_t invalid = 0;
  Cursor d(defs.data(), defs.data() + defs.size());
  while (!d.done()) {
    uint8_t tag = 0;
    if (!d.byte(tag)) return fail("truncated definition");
    switch (tag) {
      case kDefString: {
        uint64_t len = 0;
        std::string_view s;
        if (!d.varint(len) || len > d.left() || !d.bytes(size_t(len), s)) return fail("bad string");
        strings_.emplace_back(s);
        break;
      }
      case kDefStringPrefix: {
        uint64_t base = 0, prefix = 0, len = 0;
        std::string_view suffix;
        if (!d.varint(base) || !d.varint(prefix) || !d.varint(len) || len > d.left() || !d.bytes(size_t(len), suffix)) {
          return fail("bad string");
        }
        if (base >= strings_.size() || prefix > strings_[base].size()) return fail("string names an unknown prefix");
        std::string text = strings_[base].substr(0, size_t(prefix));
        text.append(suffix);
        strings_.push_back(std::move(text));
        break;
      }
      case kDefFunction: {
        uint64_t file = 0, fname = 0;
        int64_t line = 0;
        if (!d.varint(file) || !d.varint(fname) || !d.svarint(line)) return fail("bad function");
        if (file >= strings_.size() || fname >= strings_.size()) return fail("function names an unknown string");
        functions_.push_back({strings_[file], strings_[fname], int32_t(line)});
        break;
      }
      case kDefFrame: {
        uint64_t function = 0;
        int64_t line = 0;
        if (!d.varint(function) || !d.svarint(line)) return fail("bad frame");
        if (function >= functions_.size()) return fail("frame names an unknown function");
        frames_.push_back({uint32_t(function), int32_t(line)});
        break;
      }
      case kDefStackNode: {
        uint64_t parent = 0, frame = 0;
        if (!d.varint(parent) || !d.varint(frame)) return fail("bad stack");
        if (parent >= stack_nodes_.size() || frame >= frames_.size()) return fail("stack names an unknown node or frame");
        stack_nodes_.push_back({uint32_t(parent), uint32_t(frame)});
        break;
      }
      case kDefStackChain: {
        uint64_t parent = 0, n = 0;
        if (!d.varint(parent) || !d.varint(n) || n > d.left()) return fail("bad stack chain");
        if (parent >= stack_nodes_.size()) return fail("stack chain names an unknown stack");
        for (uint64_t k = 0; k < n; ++k) {
          uint64_t frame = 0;
          if (!d.varint(frame) || frame >= frames_.size()) return fail("stack chain names an unknown frame");
          stack_nodes_.push_back({uint32_t(parent), uint32_t(frame)});
          parent = stack_nodes_.size() - 1;
        }
        break;
      }
      case kDefThread: {
        uint64_t id = 0;
        int64_t tid = 0;
        if (!d.varint(id) || !d.svarint(tid)) return fail("bad thread");
        threads_.push_back({id, int32_t(tid), {}});
        break;
      }
      case kDefThreadName: {
        uint64_t thread = 0, tname = 0;
        if (!d.varint(thread) || !d.varint(tname)) return fail("bad thread name");
        if (thread >= threads_.size() || tname >= strings_.size()) return fail("thread name names an unknown thread or string");
        renamed.emplace_back(size_t(thread), threads_[thread].name);
        threads_[thread].name = strings_[tname];
        break;
      }
      case kDefProcess: {
        uint64_t pid = 0, ppid = 0, version = 0, exe = 0;
        int64_t attach_us = 0;
        if (!d.varint(pid) || !d.varint(ppid) || !d.varint(version) || !d.varint(exe) || !d.svarint(attach_us)) {
          return fail("bad process");
        }
        if (version >= strings_.size() || exe >= strings_.size()) return fail("process names an unknown string");
        if (attach_us < 0 || attach_us >= kMaxTimeUs) return fail("process attach time out of range");
        processes_.push_back({int32_t(pid), int32_t(ppid), strings_[version], strings_[exe], attach_us * 1000});
        break;
      }
      case kDefInvalid: {
        uint64_t n = 0;
        if (!d.varint(n)) return fail("bad invalid count");
        invalid += n;
        break;
      }
      default:
        return fail("unknown definition tag");
    }
  }

  // Validate the samples now, so that iteration later cannot fail.
  SampleSectionInfo info{threads_.size(), stack_nodes_.size()};
  std::vector<uint32_t> last_stack;
  std::vector<std::pair<uint32_t, uint32_t>> prev;
  uint64_t decoded = 0;
  int64_t last_us = first_us;
  const char* samples_end = base + body_end;
  if (!decode_samples(samples_begin, samples_end, first_us, info, last_stack, prev, decoded,
                      [&](const SampleRecord& r) { last_us = r.time_ns / 1000; })) {
    return fail("malformed sample records");
  }
  if (decoded != samples) return fail("sample count does not match the chunk header");
  if (decoded > 0 && uint64_t(last_us - first_us) != span_us) return fail("sample times do not match the chunk header");

  if (decoded > 0 && !chunks_.empty() && first_us * 1000 < chunks_.back().last_ns) {
    return fail("chunk starts before the previous one ends");
  }

  invalid_count_ += invalid;
  sample_count_ += decoded;
  file_stack_count_ = stack_nodes_.size();
  if (decoded > 0) {
    chunks_.push_back({size_t(samples_begin - base), body_end, first_us * 1000, last_us * 1000, decoded});
  }
  return {};
}

void SampleLog::stack_frames(uint32_t stack, std::vector<uint32_t>& out) const {
  out.clear();
  // Parents always precede children, so this walk ends; the bound is belt and braces.
  while (stack != 0 && stack < stack_nodes_.size() && out.size() < stack_nodes_.size()) {
    out.push_back(stack_nodes_[stack].frame);
    stack = stack_nodes_[stack].parent;
  }
}

size_t SampleLog::hide_functions(const std::function<bool(const LogFunction&)>& hidden) {
  std::vector<char> hide(functions_.size(), 0);
  size_t count = 0;
  for (size_t i = 0; i < functions_.size(); ++i) {
    hide[i] = hidden(functions_[i]) ? 1 : 0;
    count += hide[i];
  }
  if (count == 0) return 0;
  // Parents precede children, so one pass maps each node to the node of its visible frames.
  std::vector<StackNode> kept(1);
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> index;  // (parent, frame) -> kept node
  std::vector<uint32_t> remap(stack_nodes_.size(), 0);
  for (size_t id = 1; id < stack_nodes_.size(); ++id) {
    const StackNode& node = stack_nodes_[id];
    uint32_t parent = remap[node.parent];
    if (hide[frames_[node.frame].function]) {
      remap[id] = parent;
      continue;
    }
    auto [it, added] = index.try_emplace({parent, node.frame}, uint32_t(kept.size()));
    if (added) kept.push_back({parent, node.frame});
    remap[id] = it->second;
  }
  // Hiding again composes with what an earlier call left.
  if (!stack_remap_.empty()) {
    for (uint32_t& id : stack_remap_) id = remap[id];
  } else {
    stack_remap_ = std::move(remap);
  }
  stack_nodes_ = std::move(kept);
  return count;
}

void SampleLog::for_each_sample(int64_t from_ns, int64_t to_ns,
                                const std::function<void(const SampleRecord&)>& fn) const {
  SampleSectionInfo info{threads_.size(), file_stack_count_};
  std::vector<uint32_t> last_stack;
  std::vector<std::pair<uint32_t, uint32_t>> prev;
  for (const Chunk& chunk : chunks_) {
    if (chunk.last_ns < from_ns || chunk.first_ns >= to_ns) continue;
    bool whole = chunk.first_ns >= from_ns && chunk.last_ns < to_ns;
    uint64_t count = 0;
    const char* base = bytes_.data();
    decode_samples(base + chunk.samples_begin, base + chunk.samples_end, chunk.first_ns / 1000, info, last_stack,
                   prev, count, [&](const SampleRecord& r) {
                     if (!whole && (r.time_ns < from_ns || r.time_ns >= to_ns)) return;
                     if (stack_remap_.empty()) return fn(r);
                     SampleRecord visible = r;
                     visible.stack = stack_remap_[r.stack];
                     fn(visible);
                   });
  }
}

void SampleLog::for_each_overlap(std::span<const Window> windows,
                                 const std::function<void(const SampleRecord&, int64_t)>& fn) const {
  if (windows.empty()) return;
  const int64_t last_end = windows.back().second;
  const int64_t reach = last_end > INT64_MAX - kMaxSampleReachNs ? INT64_MAX : last_end + kMaxSampleReachNs;
  for_each_sample(windows.front().first, reach, [&](const SampleRecord& r) {
    const int64_t begin = r.time_ns - std::max<int64_t>(r.weight_ns, 0);
    // The first window that ends after the sample's interval begins; then those it reaches into.
    auto w = std::upper_bound(windows.begin(), windows.end(), begin,
                              [](int64_t t, const Window& x) { return t < x.second; });
    int64_t overlap = 0;
    bool touched = false;
    for (; w != windows.end() && w->first <= r.time_ns; ++w) {
      overlap += std::max<int64_t>(0, std::min(r.time_ns, w->second) - std::max(begin, w->first));
      // A sample of no weight inside a window still shows what ran there.
      touched = touched || (r.weight_ns <= 0 && r.time_ns >= w->first && r.time_ns < w->second);
    }
    if (overlap > 0 || touched) fn(r, overlap);
  });
}

void SampleLog::for_each_sample(const std::function<void(const SampleRecord&)>& fn) const {
  for_each_sample(INT64_MIN, INT64_MAX, fn);
}

}  // namespace sprof::store
