#pragma once
// The raw sample log: one append-only file per sampled process,
// <out>/samples/<node_id>/samples.log. Format in docs/sample-log.md.
//
// Writer: the sampler interns functions, frames, stacks and threads and appends one "tick" per
// sampling instant; flush() seals the buffered tick records into a self-delimiting, checksummed
// chunk and hands it to the kernel, so a SIGKILL of either process loses at most the open chunk.
// Reader: loads every complete chunk (stopping at the first torn or corrupt one), keeps the
// definitions in memory and indexes chunks by time, so iterating a time range only decodes the
// chunks that overlap it.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/layout.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

// Sample flags.
inline constexpr uint8_t kSampleIdle = 1;  // thread was not running (/proc state other than R)
inline constexpr uint8_t kSampleGil = 2;   // thread held the GIL


struct LogFunction {
  std::string file;      // co_filename
  std::string name;      // co_qualname (3.11+) or co_name
  int32_t first_line = 0;  // co_firstlineno
};

struct LogFrame {
  uint32_t function = 0;  // index into functions()
  int32_t line = 0;       // line executing in that frame
};

struct LogThread {
  uint64_t python_thread_id = 0;  // threading.get_ident()
  int32_t native_tid = 0;         // kernel TID, 0 if unknown
  std::string name;               // threading.Thread name; empty if never read
};

// The interpreter a log's samples came from. A process that execs a new interpreter adds another.
struct LogProcess {
  int32_t pid = 0;
  int32_t ppid = 0;
  std::string python_version;  // "3.11.7"
  std::string executable;      // /proc/PID/exe at attach time
  int64_t attach_ns = 0;       // CLOCK_MONOTONIC
};

// One thread's stack at one sampling instant.
struct SampleRecord {
  int64_t time_ns = 0;    // CLOCK_MONOTONIC, microsecond resolution
  int64_t weight_ns = 0;  // measured interval this sample stands for
  uint32_t thread = 0;    // index into threads()
  uint32_t stack = 0;     // stack id; 0 is the empty stack (no Python frames)
  uint8_t flags = 0;      // kSampleIdle | kSampleGil

  bool idle() const { return (flags & kSampleIdle) != 0; }
  bool gil() const { return (flags & kSampleGil) != 0; }
};

class SampleLogWriter {
 public:
  // Creates `file` (which must not exist) and writes the file header.
  static Result<std::unique_ptr<SampleLogWriter>> create(const std::filesystem::path& file);
  ~SampleLogWriter();
  SampleLogWriter(const SampleLogWriter&) = delete;
  SampleLogWriter& operator=(const SampleLogWriter&) = delete;

  void add_process(const LogProcess& process);

  // Interning. Ids are dense and start at 0 (stacks at 1; 0 is the empty stack). New entries
  // are written as definitions in the open chunk, before any sample that uses them.
  uint32_t function(std::string_view file, std::string_view name, int32_t first_line);
  uint32_t frame(uint32_t function, int32_t line);
  uint32_t stack(std::span<const uint32_t> frames_leaf_first);
  uint32_t thread(uint64_t python_thread_id, int32_t native_tid);
  void set_thread_name(uint32_t thread, std::string_view name);

  // Thread samples that were read but dropped as torn or inconsistent.
  void add_invalid(uint64_t count);

  // One sampling instant: begin_tick, add_sample per thread, end_tick.
  void begin_tick(int64_t time_ns, int64_t weight_ns);
  void add_sample(uint32_t thread, uint32_t stack, uint8_t flags);
  Status end_tick();

  // Seal the buffered ticks into a chunk and write it. Cheap when nothing is buffered.
  Status flush();
  Status close();

  int64_t last_flush_ns() const { return last_flush_ns_; }
  uint64_t samples_written() const { return samples_total_; }
  uint64_t bytes_written() const { return bytes_written_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Impl;
  explicit SampleLogWriter(std::filesystem::path path, int fd);
  std::filesystem::path path_;
  int fd_ = -1;
  int64_t last_flush_ns_ = 0;
  uint64_t samples_total_ = 0;
  uint64_t bytes_written_ = 0;
  std::unique_ptr<Impl> impl_;
};

struct StackNode {
  uint32_t parent = 0;  // the stack without its leaf frame (0: the leaf is the outermost frame)
  uint32_t frame = 0;   // leaf frame
};

class SampleLog {
 public:
  // Reads `file`; a torn or corrupt tail (e.g. after SIGKILL) is dropped, see truncated().
  static Result<SampleLog> open(const std::filesystem::path& file, const ProfileFiles& files = local_files());
  // The same over bytes in memory (`name` is used in messages).
  static Result<SampleLog> parse(std::string bytes, std::string name = "sample log");

  const std::vector<LogProcess>& processes() const { return processes_; }
  const std::vector<std::string>& strings() const { return strings_; }
  const std::vector<LogFunction>& functions() const { return functions_; }
  const std::vector<LogFrame>& frames() const { return frames_; }
  const std::vector<LogThread>& threads() const { return threads_; }
  // Stacks form a tree: stack_nodes()[id] for id >= 1; entry 0 is the empty stack.
  const std::vector<StackNode>& stack_nodes() const { return stack_nodes_; }
  // Frames of a stack, leaf first.
  void stack_frames(uint32_t stack, std::vector<uint32_t>& out) const;

  int32_t pid() const { return processes_.empty() ? 0 : processes_.back().pid; }
  uint64_t sample_count() const { return sample_count_; }
  uint64_t invalid_count() const { return invalid_count_; }
  size_t chunk_count() const { return chunks_.size(); }
  int64_t first_ns() const { return chunks_.empty() ? 0 : chunks_.front().first_ns; }
  int64_t last_ns() const { return chunks_.empty() ? 0 : chunks_.back().last_ns; }

  // Bytes after the last complete chunk (a cut or corrupt tail), and why reading stopped there.
  uint64_t trailing_bytes() const { return trailing_bytes_; }
  const std::string& stop_reason() const { return stop_reason_; }
  // Corrupt chunks in the middle of a version 2 log, skipped: how many, their bytes, the samples
  // they held, and why the first was bad. Their definitions are stood in for by one function,
  // "<lost in a corrupt chunk of the sample log>", so later samples that use them still count.
  uint64_t skipped_chunks() const { return skipped_chunks_; }
  uint64_t skipped_bytes() const { return skipped_bytes_; }
  uint64_t lost_samples() const { return lost_samples_; }
  const std::string& skip_reason() const { return skip_reason_; }
  uint32_t format_version() const { return version_; }

  // Drops the frames of every function `hidden` says yes to from all stacks (a sample whose frames
  // are all hidden gets the empty stack): stack_nodes() becomes the tree of what is left, and
  // samples report stack ids in it. Returns how many functions were hidden.
  size_t hide_functions(const std::function<bool(const LogFunction&)>& hidden);

  // Calls fn for every sample with from_ns <= time_ns < to_ns, in time order.
  void for_each_sample(int64_t from_ns, int64_t to_ns,
                       const std::function<void(const SampleRecord&)>& fn) const;
  void for_each_sample(const std::function<void(const SampleRecord&)>& fn) const;

  // A sample stands for the time (time_ns - weight_ns, time_ns]. Calls fn(sample, overlap_ns) for
  // every sample whose time overlaps the windows [from, to) (sorted by start, disjoint), with the
  // length of the overlap: the part of its weight that lies in them, so that a window shorter than
  // the sampling interval, or a sample whose sampler was starved, is counted for the time it
  // covers there and no more. One pass over the samples from the first window's start to
  // kMaxSampleReachNs after the last one's end, however many windows.
  static constexpr int64_t kMaxSampleReachNs = 1'000'000'000;
  using Window = std::pair<int64_t, int64_t>;
  void for_each_overlap(std::span<const Window> windows,
                        const std::function<void(const SampleRecord&, int64_t overlap_ns)>& fn) const;
  void for_each_overlap(int64_t from_ns, int64_t to_ns,
                        const std::function<void(const SampleRecord&, int64_t overlap_ns)>& fn) const {
    const Window window{from_ns, to_ns};
    for_each_overlap(std::span<const Window>(&window, 1), fn);
  }

 private:
  struct Chunk {
    size_t samples_begin = 0;  // offsets into bytes_
    size_t samples_end = 0;
    int64_t first_ns = 0;
    int64_t last_ns = 0;
    uint64_t samples = 0;
  };
  Status load_chunk(size_t body_begin, size_t body_end);
  void fill_lost_definitions();

  std::string bytes_;
  std::vector<Chunk> chunks_;
  std::vector<LogProcess> processes_;
  std::vector<std::string> strings_;
  std::vector<LogFunction> functions_;
  std::vector<LogFrame> frames_;
  std::vector<LogThread> threads_;
  std::vector<StackNode> stack_nodes_;
  // After hide_functions: the stack id in stack_nodes_ of each stack id the file defines.
  std::vector<uint32_t> stack_remap_;
  size_t file_stack_count_ = 0;  // stacks the file defines (what its sample records refer to)
  uint64_t sample_count_ = 0;
  uint64_t invalid_count_ = 0;
  uint64_t trailing_bytes_ = 0;
  std::string stop_reason_;
  uint32_t version_ = 0;
  uint64_t skipped_chunks_ = 0;
  uint64_t skipped_bytes_ = 0;
  uint64_t lost_samples_ = 0;
  std::string skip_reason_;
  bool resume_after_gap_ = false;  // the next chunk follows skipped ones
  uint64_t lost_processes_ = 0;      // process definitions in skipped chunks
  uint64_t gap_bytes_ = 0;           // bytes skipped since the last chunk that loaded
  std::vector<size_t> lost_frames_;  // stand-ins, pointed at the lost function at the end
  std::vector<size_t> lost_stacks_;
};

}  // namespace sprof::store
