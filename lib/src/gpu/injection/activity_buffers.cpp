#include "gpu/injection/activity_buffers.hpp"

#include <cstdlib>

namespace sprof::gpu::injection {
namespace {

// Where records go once kMaxBuffers are held. It may be handed to CUPTI twice at once (its
// records are never read, only counted), so the count of what it swallowed is approximate then.
alignas(64) uint8_t discard_buffer[size_t(1) << 20];

constexpr size_t kKeepFree = 4;  // buffers kept for reuse instead of freed

}  // namespace

ActivityBuffers::ActivityBuffers(decltype(&::cuptiActivityGetNextRecord) next_record) : next_record_(next_record) {
  queue_.reserve(kMaxBuffers);
  free_.reserve(kKeepFree);
}

uint8_t* ActivityBuffers::request(size_t& size) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      uint8_t* buffer = free_.back();
      free_.pop_back();
      size = kBufferSize;
      return buffer;
    }
    if (allocated_ < kMaxBuffers) {
      // 8-byte alignment is CUPTI's requirement; 64 keeps records off shared cache lines.
      if (void* buffer = std::aligned_alloc(64, kBufferSize); buffer != nullptr) {
        ++allocated_;
        size = kBufferSize;
        return static_cast<uint8_t*>(buffer);
      }
    }
  }
  return discard(size);
}

uint8_t* ActivityBuffers::discard(size_t& size) {
  size = sizeof discard_buffer;
  return discard_buffer;
}

void ActivityBuffers::complete(uint8_t* buffer, size_t valid) {
  if (buffer == nullptr) return;
  if (buffer == discard_buffer) {
    // Counted here, not queued: the discard buffer may already be back in CUPTI's hands.
    uint64_t lost = 0;
    CUpti_Activity* record = nullptr;
    if (next_record_ != nullptr) {
      while (next_record_(buffer, valid, &record) == CUPTI_SUCCESS) ++lost;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    discarded_records_ += lost;
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (queue_.size() < queue_.capacity()) {
    queue_.push_back({buffer, valid});
  } else {
    // Cannot happen (at most kMaxBuffers exist); never allocate on CUPTI's thread.
    std::free(buffer);
    --allocated_;
  }
  if (queue_.size() >= kWakeAt) wake_.notify_one();
}

bool ActivityBuffers::wait(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait_until(lock, deadline, [&] { return stop_ || queue_.size() >= kWakeAt; });
  return stop_;
}

std::vector<FilledBuffer> ActivityBuffers::take() {
  std::vector<FilledBuffer> out;
  out.reserve(kMaxBuffers);  // outside the lock: swap keeps complete()'s capacity
  std::lock_guard<std::mutex> lock(mutex_);
  out.swap(queue_);
  return out;
}

void ActivityBuffers::recycle(uint8_t* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.size() < kKeepFree) {
    free_.push_back(buffer);
  } else {
    std::free(buffer);
    --allocated_;
  }
}

uint64_t ActivityBuffers::discarded_records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return discarded_records_;
}

void ActivityBuffers::request_stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stop_ = true;
  wake_.notify_all();
}

void ActivityBuffers::mark_finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_flag_ = true;
  finished_.notify_all();
}

bool ActivityBuffers::wait_finished(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return finished_.wait_for(lock, timeout, [&] { return finished_flag_; });
}

}  // namespace sprof::gpu::injection
