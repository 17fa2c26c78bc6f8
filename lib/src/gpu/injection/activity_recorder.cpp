#include "gpu/injection/activity_recorder.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "gpu/injection/activity_buffers.hpp"
#include "gpu/injection/activity_file_writer.hpp"
#include "sprof/clock.hpp"
#include "gpu/injection/record_converter.hpp"

namespace sprof::gpu::injection {
namespace {

using namespace std::chrono_literals;

// On-device staging (set before any context exists, i.e. now): 8 MiB instead of 3.2 MB per
// buffer and up to 400 instead of 250 of them, so that high launch rates between two flushes
// keep their timestamps. CUPTI allocates a few up front and more only when they fill.
constexpr size_t kDeviceBufferSize = size_t(8) << 20;
constexpr size_t kDeviceBufferPoolLimit = 400;
constexpr auto kFlushPeriod = 1s;
constexpr auto kExitWait = 5s;  // the most the exit handler waits for the last flush

struct KindToEnable {
  CUpti_ActivityKind kind;
  const char* what;
};
// CONCURRENT_KERNEL, never KERNEL: KERNEL serialises kernels.
constexpr KindToEnable kKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "peer memcpy"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "memset"},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API"},
    {CUPTI_ACTIVITY_KIND_DRIVER, "driver launches"},  // by cbid: see enable_driver_launches
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization"},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "CUPTI overhead"},
    {CUPTI_ACTIVITY_KIND_DEVICE, "devices"},
    {CUPTI_ACTIVITY_KIND_CONTEXT, "contexts"},
};

// Runtime calls made so often that they would drown the launches and copies (on an H200,
// PyTorch 2.11's training step calls cudaGetErrorString ten times).
constexpr CUpti_CallbackId kNoisyRuntimeCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000,
};

// Driver calls kept: launches (Triton and other driver-API users launch with cuLaunchKernel,
// which the runtime records never show). Without the DRIVER kind enabled, only these are
// recorded. Driver copies and syncs are left out: their GPU side is recorded as MEMCPY and
// SYNCHRONIZATION activity anyway.
constexpr CUpti_CallbackId kDriverLaunchCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

uint64_t CUPTIAPI monotonic_timestamp() { return uint64_t(monotonic_ns()); }

class Recorder {
 public:
  Recorder(const LoadedCupti& cupti, CUpti_SubscriberHandle subscriber, std::string dir, ProcessState state)
      : cupti_(cupti),
        fn_(cupti_.fn),
        subscriber_(subscriber),
        dir_(std::move(dir)),
        state_(std::move(state)),
        owner_(getpid()),
        buffers_(fn_.activity_get_next_record),
        converter_(fn_, identity()) {}

  ProcessState start(const std::string& from);
  // Recording does not go on: kinds disabled, subscription released, file removed.
  void release();

  // CUPTI's callbacks carry no user data: they find the one recorder through this.
  static std::atomic<Recorder*> instance;

  static void CUPTIAPI request_buffer(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI complete_buffer(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid);
  static void at_exit();
  static void in_forked_child();

 private:
  ProcessIdentity identity() const;
  ProcessState fail(CUptiResult result, const std::string& from, const std::string& step);
  int64_t measure_clock_offset() const;
  CUptiResult enable_driver_launches();
  void writer_loop();
  void write_pending();
  void exit_flush();

  LoadedCupti cupti_;
  const CuptiFunctions& fn_;
  CUpti_SubscriberHandle subscriber_;
  std::string dir_;
  ProcessState state_;
  const pid_t owner_;
  ActivityBuffers buffers_;
  ActivityFileWriter file_;
  RecordConverter converter_;
  std::thread writer_;
  std::vector<CUpti_ActivityKind> enabled_;
  bool clock_callback_ = false;  // CUPTI's times are CLOCK_MONOTONIC already
  bool released_ = false;
  bool driver_launches_on_ = false;
  uint64_t cupti_dropped_ = 0;   // writer thread only
  std::atomic<bool> recording_{false};
  std::atomic<bool> inert_{false};  // a forked child, or recording never started
  std::atomic<bool> exiting_{false};
};

std::atomic<Recorder*> Recorder::instance{nullptr};

ProcessIdentity Recorder::identity() const {
  ProcessIdentity id;
  id.pid = uint32_t(owner_);
  id.rank = env_int("RANK");
  id.local_rank = env_int("LOCAL_RANK");
  id.world_size = env_int("WORLD_SIZE");
  id.cupti_version = state_.cupti_version;
  id.cupti_path = state_.cupti;
  return id;
}

// CUPTI's clock (CLOCK_REALTIME when the timestamp callback was refused) minus CLOCK_MONOTONIC,
// from the narrowest of a few (monotonic, CUPTI, monotonic) brackets.
int64_t Recorder::measure_clock_offset() const {
  int64_t best_width = INT64_MAX, offset = realtime_ns() - monotonic_ns();
  for (int i = 0; i < 10; ++i) {
    int64_t before = monotonic_ns();
    uint64_t cupti_now = 0;
    if (fn_.get_timestamp == nullptr || fn_.get_timestamp(&cupti_now) != CUPTI_SUCCESS) cupti_now = uint64_t(realtime_ns());
    int64_t after = monotonic_ns();
    if (after - before < best_width) {
      best_width = after - before;
      offset = int64_t(cupti_now) - (before + (after - before) / 2);
    }
  }
  return offset;
}

// The DRIVER kind stays off (it would record every driver call); its launch calls are switched
// on one by one instead, which CUPTI allows without the kind.
CUptiResult Recorder::enable_driver_launches() {
  if (fn_.activity_enable_driver_api == nullptr) return CUPTI_ERROR_NOT_SUPPORTED;
  CUptiResult result = CUPTI_ERROR_UNKNOWN;
  for (CUpti_CallbackId cbid : kDriverLaunchCalls) {
    CUptiResult r = fn_.activity_enable_driver_api(cbid, 1);
    if (r == CUPTI_SUCCESS || result != CUPTI_SUCCESS) result = r;
  }
  driver_launches_on_ = result == CUPTI_SUCCESS;
  return result;
}

void Recorder::release() {
  if (released_) return;
  released_ = true;
  inert_ = true;
  if (fn_.activity_disable != nullptr) {
    for (CUpti_ActivityKind kind : enabled_) fn_.activity_disable(kind);
  }
  enabled_.clear();
  if (driver_launches_on_) {
    for (CUpti_CallbackId cbid : kDriverLaunchCalls) fn_.activity_enable_driver_api(cbid, 0);
  }
  fn_.unsubscribe(subscriber_);
  file_.discard();
}

ProcessState Recorder::fail(CUptiResult result, const std::string& from, const std::string& step) {
  release();
  describe_failure(fn_, result, from, step, nullptr, state_.state, state_.detail);
  return state_;
}

ProcessState Recorder::start(const std::string& from) {
  if (std::string missing = missing_for_recording(fn_); !missing.empty()) {
    release();
    state_.state = "cupti_error";
    state_.detail = from + " lacks " + missing + ": too old to record GPU activity";
    return state_;
  }
  std::string path = dir_ + "/" + std::to_string(owner_) + ".gpu";
  if (std::string error; !file_.open(path, error)) {
    release();
    state_.state = "output_error";
    state_.detail = error;
    return state_;
  }

  std::vector<std::string> notes;
  // System thread ids (gettid) in API records: the ones the sampler sees.
  if (fn_.set_thread_id_type == nullptr) {
    notes.push_back("thread ids are CUPTI's own (no cuptiSetThreadIdType)");
  } else if (CUptiResult r = fn_.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM); r != CUPTI_SUCCESS) {
    notes.push_back("thread ids are CUPTI's own (" + result_text(fn_, r) + ")");
  }
  // Before any kind is enabled: switching clocks mid-session would mix them.
  CUptiResult clock = fn_.activity_register_timestamp_callback != nullptr
                          ? fn_.activity_register_timestamp_callback(monotonic_timestamp)
                          : CUPTI_ERROR_NOT_SUPPORTED;
  clock_callback_ = clock == CUPTI_SUCCESS;
  if (!clock_callback_) {
    converter_.set_clock_offset(measure_clock_offset());
    notes.push_back("times converted from CUPTI's CLOCK_REALTIME with a measured offset (timestamp callback: " +
                    (fn_.activity_register_timestamp_callback != nullptr ? result_text(fn_, clock) : "missing") + ")");
  }
  if (fn_.activity_set_attribute != nullptr) {
    size_t value = kDeviceBufferSize, size = sizeof value;
    fn_.activity_set_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value);
    value = kDeviceBufferPoolLimit;
    size = sizeof value;
    fn_.activity_set_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &size, &value);
  }

  instance.store(this, std::memory_order_release);
  if (CUptiResult r = fn_.activity_register_callbacks(request_buffer, complete_buffer); r != CUPTI_SUCCESS) {
    return fail(r, from, "registering activity buffers");
  }

  std::string traced, not_traced;
  CUptiResult first_error = CUPTI_SUCCESS;
  auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
  int kinds_on = 0;
  for (const KindToEnable& k : kKinds) {
    CUptiResult r = k.kind == CUPTI_ACTIVITY_KIND_DRIVER ? enable_driver_launches() : fn_.activity_enable(k.kind);
    if (r == CUPTI_SUCCESS) {
      if (k.kind != CUPTI_ACTIVITY_KIND_DRIVER) {
        enabled_.push_back(k.kind);
        ++kinds_on;  // driver launches alone would be a recording of nothing
      }
      add(traced, k.what);
      // After the kind: enabling RUNTIME afterwards would switch every call back on.
      if (k.kind == CUPTI_ACTIVITY_KIND_RUNTIME && fn_.activity_enable_runtime_api != nullptr) {
        for (CUpti_CallbackId cbid : kNoisyRuntimeCalls) fn_.activity_enable_runtime_api(cbid, 0);
      }
    } else {
      if (first_error == CUPTI_SUCCESS) first_error = r;
      bool no_switch = k.kind == CUPTI_ACTIVITY_KIND_DRIVER && fn_.activity_enable_driver_api == nullptr;
      add(not_traced, std::string(k.what) + " (" + (no_switch ? "no cuptiActivityEnableDriverApi" : result_text(fn_, r)) + ")");
    }
  }
  if (kinds_on == 0) return fail(first_error, from, "enabling activity kinds");

  state_.state = "recording";
  state_.detail = from + " records " + traced + " to " + path;
  if (!not_traced.empty()) notes.push_back("not recorded: " + not_traced);
  for (const std::string& note : notes) state_.detail += "; " + note;

  // The writer starts with every signal blocked (a thread inherits its creator's mask), so
  // that the target's signals are never delivered to it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    writer_ = std::thread([this] { writer_loop(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    release();
    state_.state = "cupti_error";
    state_.detail = from + ": cannot start sprof's writer thread";
    return state_;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  recording_ = true;
  std::atexit(at_exit);
  pthread_atfork(nullptr, nullptr, in_forked_child);
  return state_;
}

void CUPTIAPI Recorder::request_buffer(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  Recorder* r = instance.load(std::memory_order_acquire);
  // In a forked child the buffers' mutex may have been copied locked: take nothing from it.
  if (r == nullptr || r->inert_) {
    *buffer = ActivityBuffers::discard(*size);
    return;
  }
  *buffer = r->buffers_.request(*size);
}

void CUPTIAPI Recorder::complete_buffer(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Recorder* r = instance.load(std::memory_order_acquire);
  if (r == nullptr || r->inert_) return;
  r->buffers_.complete(buffer, valid);
}

void Recorder::writer_loop() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "sprof-gpu");
  auto next = std::chrono::steady_clock::now() + kFlushPeriod;
  for (;;) {
    bool stopping = buffers_.wait(next);
    if (inert_) return;
    next = std::chrono::steady_clock::now() + kFlushPeriod;
    // Periodic flushes return complete buffers only; the last one forces out every buffer.
    fn_.activity_flush_all(stopping ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    try {
      write_pending();
    } catch (...) {
      // Out of memory while converting: that batch is lost, recording goes on.
    }
    if (stopping) {
      buffers_.mark_finished();
      return;
    }
  }
}

void Recorder::write_pending() {
  std::vector<FilledBuffer> filled = buffers_.take();
  struct Recycle {
    ActivityBuffers& buffers;
    std::vector<FilledBuffer>& filled;
    ~Recycle() {
      for (const FilledBuffer& b : filled) buffers.recycle(b.data);
    }
  } recycle{buffers_, filled};
  // Read with no lock of ours held: CUPTI may take its own lock here, and the request
  // callback ours (kineto met that ABBA deadlock).
  size_t dropped = 0;
  if (fn_.activity_get_num_dropped_records != nullptr &&
      fn_.activity_get_num_dropped_records(nullptr, 0, &dropped) == CUPTI_SUCCESS) {
    cupti_dropped_ += dropped;
  }
  // Re-measured for every batch: CLOCK_REALTIME can be stepped while the process runs.
  if (!clock_callback_) converter_.set_clock_offset(measure_clock_offset());
  std::vector<std::string> chunks;
  converter_.convert(filled, cupti_dropped_ + buffers_.discarded_records(), chunks);
  for (const std::string& chunk : chunks) file_.append(chunk);
}

// At exit of the owner process: the writer thread does the forced flush, converts and writes the
// last chunk; this waits for it at most kExitWait, so that a CUPTI stuck in teardown cannot hold
// the process. cuptiFinalize is never called (kineto saw it race other threads into a crash).
void Recorder::exit_flush() {
  if (fn_.get_last_error != nullptr) fn_.get_last_error();
  buffers_.request_stop();
  ProcessState final_state = state_;
  if (buffers_.wait_finished(kExitWait)) {
    writer_.join();  // after which its counts are ours to read
    RecordingCounts counts;
    counts.records = converter_.records_written();
    counts.chunks = file_.chunks();
    counts.dropped = cupti_dropped_ + buffers_.discarded_records();
    counts.untimed = converter_.untimed();
    final_state.counts = counts;
    if (file_.failed_writes() > 0) {
      final_state.detail += "; " + std::to_string(file_.failed_writes()) + " chunk(s) could not be written";
    }
  } else {
    // Left running: the process ends under it.
    final_state.detail += "; the last flush did not finish within 5 s of exit";
  }
  write_state(dir_, final_state);
}

void Recorder::at_exit() {
  Recorder* r = instance.load(std::memory_order_acquire);
  // Only the process that started recording: a forked child inherited this handler but not
  // CUPTI's threads nor the writer, and a flush there hangs.
  if (r == nullptr || !r->recording_ || r->inert_ || getpid() != r->owner_) return;
  if (r->exiting_.exchange(true)) return;
  try {
    r->exit_flush();
  } catch (...) {
  }
}

void Recorder::in_forked_child() {
  if (Recorder* r = instance.load(std::memory_order_acquire); r != nullptr) r->inert_ = true;
}

}  // namespace

ProcessState start_recording(const LoadedCupti& cupti, CUpti_SubscriberHandle subscriber, const std::string& dir,
                             ProcessState state, const std::string& from) {
  ProcessState failed = state;
  Recorder* recorder = nullptr;
  try {
    // Never deleted: CUPTI may call back into it until the process ends.
    recorder = new Recorder(cupti, subscriber, dir, std::move(state));
    return recorder->start(from);
  } catch (...) {
    // Out of memory before the writer started (nothing after that throws).
    if (recorder != nullptr) {
      recorder->release();
    } else {
      cupti.fn.unsubscribe(subscriber);
    }
    failed.state = "cupti_error";
    failed.detail = "out of memory while starting to record GPU activity";
    return failed;
  }
}

}  // namespace sprof::gpu::injection
