#pragma once
// The host buffers CUPTI fills, and the queue of filled ones between CUPTI's thread and the
// writer thread. CUPTI's callbacks only hand buffers over here (a pointer and a size, under a
// mutex): converting and writing happen on the writer thread, so CUPTI's thread is never held.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include <cupti.h>

namespace sprof::gpu::injection {

struct FilledBuffer {
  uint8_t* data = nullptr;
  size_t valid = 0;  // bytes of records in it
};

class ActivityBuffers {
 public:
  // CUPTI suggests 1-10 MB; 64 of 4 MiB (256 MiB) is the most held at once, after which
  // records go to a discard buffer and are counted as dropped.
  static constexpr size_t kBufferSize = size_t(4) << 20;
  static constexpr size_t kMaxBuffers = 64;
  // This many filled buffers wake the writer before its second is up.
  static constexpr size_t kWakeAt = 8;

  // next_record: the loaded CUPTI's cuptiActivityGetNextRecord, to count what the discard
  // buffer swallowed.
  explicit ActivityBuffers(decltype(&::cuptiActivityGetNextRecord) next_record);

  // CUPTI's request callback: a free buffer, a new one while under the cap, else the discard
  // buffer (never NULL: CUPTI before API v27 crashes on it). Never throws.
  uint8_t* request(size_t& size);
  // CUPTI's completion callback: queues the buffer for the writer. Never throws, never blocks
  // beyond the queue's mutex.
  void complete(uint8_t* buffer, size_t valid);
  // The discard buffer alone, taking no lock (a forked child's copy of the mutex may be held).
  static uint8_t* discard(size_t& size);

  // The writer: waits until `deadline`, enough filled buffers, or a stop; true when stopping.
  bool wait(std::chrono::steady_clock::time_point deadline);
  // The filled buffers so far, oldest first.
  std::vector<FilledBuffer> take();
  // A converted buffer back to the free list (or freed).
  void recycle(uint8_t* buffer);
  // Records lost in the discard buffer so far.
  uint64_t discarded_records() const;

  // Exit: asks the writer to stop (after a last forced flush), and waits for it to say it is done.
  void request_stop();
  void mark_finished();
  bool wait_finished(std::chrono::milliseconds timeout);

 private:
  decltype(&::cuptiActivityGetNextRecord) next_record_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;      // the writer waits on it
  std::condition_variable finished_;  // the exit handler waits on it
  std::vector<FilledBuffer> queue_;   // capacity reserved: complete() never allocates
  std::vector<uint8_t*> free_;
  size_t allocated_ = 0;              // buffers that exist: in CUPTI, queued, being converted or free
  uint64_t discarded_records_ = 0;
  bool stop_ = false;
  bool finished_flag_ = false;
};

}  // namespace sprof::gpu::injection
