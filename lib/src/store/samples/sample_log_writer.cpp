// Sample-log writer. Everything on the per-sample path (frame, stack, add_sample, end_tick) works
// on integers in preallocated buffers; strings are only touched when a new function or thread
// name appears.

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sprof/clock.hpp"
#include "sprof/sample_log.hpp"
#include "store/codecs/crc32.hpp"
#include "store/samples/sample_log_format.hpp"

namespace sprof::store {

using namespace samplelog;

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

// Flush early when a chunk grows this large, so memory stays bounded at any rate.
constexpr size_t kChunkSoftLimit = 4u << 20;

}  // namespace

struct SampleLogWriter::Impl {
  std::string defs;
  std::string samples;
  std::string body;  // reused to assemble a chunk

  std::unordered_map<std::string, uint32_t> string_ids;
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, uint32_t> function_ids;
  std::unordered_map<uint64_t, uint32_t> frame_ids;
  std::map<std::pair<uint64_t, int32_t>, uint32_t> thread_ids;
  uint32_t next_function = 0;
  uint32_t next_frame = 0;
  uint32_t next_thread = 0;

  // Stack tree: node ids from 1, node 0 is the empty stack.
  std::vector<uint32_t> node_parent{0};
  std::vector<uint32_t> node_frame{0};
  std::unordered_map<uint64_t, uint32_t> child_of;     // (parent << 32 | frame) -> node
  std::unordered_map<uint64_t, uint32_t> stack_cache;  // hash of the whole stack -> node

  uint32_t processes = 0;

  // What the chunks written so far hold (v2 chunk headers repeat it, so that a reader can pick up
  // after a corrupt chunk: the ids the next chunk's definitions start at, the samples lost).
  ChunkStart written;

  // Open chunk.
  bool have_tick = false;
  int64_t first_us = 0;
  int64_t prev_us = 0;
  int64_t written_us = INT64_MIN;  // last tick time in the log: chunks never overlap in time
  uint64_t chunk_samples = 0;
  uint64_t chunk_invalid = 0;
  uint32_t chunk_generation = 1;
  std::vector<std::pair<uint32_t, uint32_t>> last_stack;  // per thread: (generation, stack)

  // Tick being assembled, and the previous tick of this chunk (for repeat records).
  bool in_tick = false;
  int64_t tick_us = 0;
  int64_t tick_weight_us = 0;
  std::vector<std::pair<uint32_t, uint32_t>> entries;  // (thread << 3 | flags, stack)
  std::vector<std::pair<uint32_t, uint32_t>> prev_entries;
  bool prev_valid = false;

  // Every string defined so far, in byte order: file names share long directory prefixes, and
  // the longest prefix a new string shares with any earlier one is shared with one of its two
  // neighbours in this order, so a new string is written as (that string, length of the shared
  // prefix, rest) when that saves bytes.
  std::map<std::string, uint32_t, std::less<>> sorted_strings;

  static size_t common_prefix(std::string_view a, std::string_view b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
  }

  uint32_t string_id(std::string_view s) {
    auto it = string_ids.find(std::string(s));
    if (it != string_ids.end()) return it->second;
    auto id = uint32_t(string_ids.size());
    string_ids.emplace(std::string(s), id);
    size_t best_prefix = 0;
    uint32_t best_base = 0;
    auto next = sorted_strings.lower_bound(s);
    if (next != sorted_strings.end()) {
      best_prefix = common_prefix(next->first, s);
      best_base = next->second;
    }
    if (next != sorted_strings.begin()) {
      auto prev = std::prev(next);
      if (size_t n = common_prefix(prev->first, s); n > best_prefix) {
        best_prefix = n;
        best_base = prev->second;
      }
    }
    if (best_prefix >= 4) {
      defs.push_back(char(kDefStringPrefix));
      put_varint(defs, best_base);
      put_varint(defs, best_prefix);
      put_varint(defs, s.size() - best_prefix);
      defs.append(s.substr(best_prefix));
    } else {
      defs.push_back(char(kDefString));
      put_varint(defs, s.size());
      defs.append(s);
    }
    sorted_strings.emplace(std::string(s), id);
    return id;
  }
};

SampleLogWriter::SampleLogWriter(std::filesystem::path path, int fd)
    : path_(std::move(path)), fd_(fd), last_flush_ns_(monotonic_ns()), impl_(std::make_unique<Impl>()) {
  impl_->defs.reserve(64 << 10);
  impl_->samples.reserve(256 << 10);
  impl_->entries.reserve(64);
  impl_->prev_entries.reserve(64);
}

SampleLogWriter::~SampleLogWriter() {
  if (fd_ >= 0) (void)close();
}

Result<std::unique_ptr<SampleLogWriter>> SampleLogWriter::create(const std::filesystem::path& file) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error(ErrorKind::io, "cannot create sample log {}: {}", file.string(), std::strerror(errno));
  }
  std::string header(kFileMagic, sizeof kFileMagic);
  put_u32(header, kFormatVersion);
  put_u32(header, uint32_t(kFileHeaderSize));
  if (::write(fd, header.data(), header.size()) != ssize_t(header.size())) {
    int err = errno;
    ::close(fd);
    return make_error(ErrorKind::io, "cannot write sample log {}: {}", file.string(), std::strerror(err));
  }
  auto writer = std::unique_ptr<SampleLogWriter>(new SampleLogWriter(file, fd));
  writer->bytes_written_ = header.size();
  return writer;
}

void SampleLogWriter::add_process(const LogProcess& process) {
  Impl& m = *impl_;
  uint32_t version = m.string_id(process.python_version);
  uint32_t exe = m.string_id(process.executable);
  ++m.processes;
  m.defs.push_back(char(kDefProcess));
  put_varint(m.defs, uint32_t(process.pid));
  put_varint(m.defs, uint32_t(process.ppid));
  put_varint(m.defs, version);
  put_varint(m.defs, exe);
  put_svarint(m.defs, process.attach_ns / 1000);
}

uint32_t SampleLogWriter::function(std::string_view file, std::string_view name, int32_t first_line) {
  Impl& m = *impl_;
  uint32_t file_id = m.string_id(file);
  uint32_t name_id = m.string_id(name);
  auto key = std::make_tuple(file_id, name_id, first_line);
  auto it = m.function_ids.find(key);
  if (it != m.function_ids.end()) return it->second;
  uint32_t id = m.next_function++;
  m.function_ids.emplace(key, id);
  m.defs.push_back(char(kDefFunction));
  put_varint(m.defs, file_id);
  put_varint(m.defs, name_id);
  put_svarint(m.defs, first_line);
  return id;
}

uint32_t SampleLogWriter::frame(uint32_t function, int32_t line) {
  Impl& m = *impl_;
  uint64_t key = uint64_t(function) << 32 | uint32_t(line);
  auto it = m.frame_ids.find(key);
  if (it != m.frame_ids.end()) return it->second;
  uint32_t id = m.next_frame++;
  m.frame_ids.emplace(key, id);
  m.defs.push_back(char(kDefFrame));
  put_varint(m.defs, function);
  put_svarint(m.defs, line);
  return id;
}

uint32_t SampleLogWriter::stack(std::span<const uint32_t> frames) {
  if (frames.empty()) return 0;
  Impl& m = *impl_;
  uint64_t h = frames.size();
  for (uint32_t f : frames) h = mix(h, f);

  // Fast path: a stack seen before, confirmed by walking its nodes (hash collisions are possible).
  auto cached = m.stack_cache.find(h);
  if (cached != m.stack_cache.end()) {
    uint32_t node = cached->second;
    size_t i = 0;
    while (i < frames.size() && node != 0 && m.node_frame[node] == frames[i]) {
      node = m.node_parent[node];
      ++i;
    }
    if (i == frames.size() && node == 0) return cached->second;
  }

  // Slow path: descend the tree from the outermost frame while it exists, then add the rest as
  // one chain of new nodes.
  uint32_t node = 0;
  size_t i = frames.size();
  while (i > 0) {
    auto it = m.child_of.find(uint64_t(node) << 32 | frames[i - 1]);
    if (it == m.child_of.end()) break;
    node = it->second;
    --i;
  }
  if (i > 0) {
    m.defs.push_back(char(kDefStackChain));
    put_varint(m.defs, node);
    put_varint(m.defs, i);
    while (i-- > 0) {
      auto id = uint32_t(m.node_parent.size());
      m.node_parent.push_back(node);
      m.node_frame.push_back(frames[i]);
      m.child_of.emplace(uint64_t(node) << 32 | frames[i], id);
      put_varint(m.defs, frames[i]);
      node = id;
    }
  }
  m.stack_cache[h] = node;
  return node;
}

uint32_t SampleLogWriter::thread(uint64_t python_thread_id, int32_t native_tid) {
  Impl& m = *impl_;
  auto key = std::make_pair(python_thread_id, native_tid);
  auto it = m.thread_ids.find(key);
  if (it != m.thread_ids.end()) return it->second;
  uint32_t id = m.next_thread++;
  m.thread_ids.emplace(key, id);
  m.last_stack.emplace_back(0, 0);
  m.defs.push_back(char(kDefThread));
  put_varint(m.defs, python_thread_id);
  put_svarint(m.defs, native_tid);
  return id;
}

void SampleLogWriter::set_thread_name(uint32_t thread, std::string_view name) {
  Impl& m = *impl_;
  uint32_t name_id = m.string_id(name);
  m.defs.push_back(char(kDefThreadName));
  put_varint(m.defs, thread);
  put_varint(m.defs, name_id);
}

void SampleLogWriter::add_invalid(uint64_t count) { impl_->chunk_invalid += count; }

void SampleLogWriter::begin_tick(int64_t time_ns, int64_t weight_ns) {
  Impl& m = *impl_;
  m.in_tick = true;
  m.tick_us = time_ns / 1000;
  m.tick_weight_us = weight_ns / 1000;
  m.entries.clear();
}

void SampleLogWriter::add_sample(uint32_t thread, uint32_t stack, uint8_t flags) {
  impl_->entries.emplace_back(thread << 3 | (flags & (kSampleIdle | kSampleGil)), stack);
}

Status SampleLogWriter::end_tick() {
  Impl& m = *impl_;
  if (!m.in_tick) return {};
  m.in_tick = false;
  if (m.entries.empty()) return {};

  if (!m.have_tick) {
    m.have_tick = true;
    m.first_us = std::max(m.tick_us, m.written_us);
    m.prev_us = m.first_us;
  }
  // Time never runs backwards within a log; clamp rather than encode a negative delta.
  int64_t t = std::max(m.tick_us, m.prev_us);
  auto dt = uint64_t(t - m.prev_us);
  bool explicit_weight = m.tick_weight_us != int64_t(dt);
  bool repeat = m.prev_valid && m.entries == m.prev_entries;

  std::string& out = m.samples;
  out.push_back(char((repeat ? kTickRepeatTag : kTickTag) | (explicit_weight ? kTickWeightBit : 0)));
  put_varint(out, dt);
  if (explicit_weight) put_varint(out, uint64_t(std::max<int64_t>(m.tick_weight_us, 0)));
  if (!repeat) {
    put_varint(out, m.entries.size());
    for (auto [key, stack] : m.entries) {
      auto& last = m.last_stack[key >> 3];
      if (last.first == m.chunk_generation && last.second == stack) {
        put_varint(out, key | kEntrySameStack);
      } else {
        put_varint(out, key);
        put_varint(out, stack);
        last = {m.chunk_generation, stack};
      }
    }
    std::swap(m.entries, m.prev_entries);
    m.prev_valid = true;
  }
  m.prev_us = t;
  m.written_us = t;
  m.chunk_samples += m.prev_entries.size();
  samples_total_ += m.prev_entries.size();

  if (m.samples.size() + m.defs.size() > kChunkSoftLimit) return flush();
  return {};
}

Status SampleLogWriter::flush() {
  Impl& m = *impl_;
  last_flush_ns_ = monotonic_ns();
  if (fd_ < 0) return make_error(ErrorKind::io, "sample log {} is closed", path_.string());
  if (m.defs.empty() && m.samples.empty() && m.chunk_invalid == 0) return {};
  if (m.chunk_invalid > 0) {
    m.defs.push_back(char(kDefInvalid));
    put_varint(m.defs, m.chunk_invalid);
  }

  std::string& body = m.body;
  body.clear();
  put_varint(body, m.defs.size());
  put_svarint(body, m.have_tick ? m.first_us : 0);
  put_varint(body, m.have_tick ? uint64_t(m.prev_us - m.first_us) : 0);
  put_varint(body, m.chunk_samples);
  put_chunk_start(body, m.written);
  body.append(m.defs);
  body.append(m.samples);

  std::string chunk(kChunkMagic, sizeof kChunkMagic);
  put_u32(chunk, uint32_t(body.size()));
  put_u32(chunk, crc32(body.data(), body.size()));
  chunk.append(body);

  // Reset the chunk state before writing: a failed write loses this chunk, not the log's framing
  // (the reader skips the torn chunk and stands in for its definitions).
  m.written = {samples_total_, m.string_ids.size(), m.next_function, m.next_frame, m.node_parent.size() - 1,
               m.next_thread, m.processes};
  m.defs.clear();
  m.samples.clear();
  m.have_tick = false;
  m.chunk_samples = 0;
  m.chunk_invalid = 0;
  m.prev_valid = false;
  ++m.chunk_generation;

  const char* p = chunk.data();
  size_t left = chunk.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorKind::io, "cannot write sample log {}: {}", path_.string(), std::strerror(errno));
    }
    p += n;
    left -= size_t(n);
  }
  bytes_written_ += chunk.size();
  return {};
}

Status SampleLogWriter::close() {
  if (fd_ < 0) return {};
  Status status = flush();
  if (::close(fd_) != 0 && status.ok()) {
    status = make_error(ErrorKind::io, "cannot close sample log {}: {}", path_.string(), std::strerror(errno));
  }
  fd_ = -1;
  return status;
}

}  // namespace sprof::store
