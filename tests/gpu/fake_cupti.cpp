// A stand-in for libcupti that libsprof_cupti.so loads through SPROF_CUPTI_PATH in tests: the
// functions the injection resolves, with CUPTI's own signatures (cupti.h), driven by FAKE_CUPTI_*
// variables. No GPU needed (docs/gpu-activity.md, "Testing").
//
//   FAKE_CUPTI_LOG=FILE          every call appended as "<pid> <call> <args>"
//   FAKE_CUPTI_SUBSCRIBE=N       cuptiSubscribe(_v2)'s result; 39 names FAKE_CUPTI_OTHER (nsys)
//   FAKE_CUPTI_REGISTER_CALLBACKS=N, FAKE_CUPTI_TIMESTAMP_CALLBACK=N   those calls' results
//   FAKE_CUPTI_ENABLE=N          cuptiActivityEnable's result for the kinds in
//   FAKE_CUPTI_ENABLE_KINDS=K,.. (all kinds when unset)
//   FAKE_CUPTI_SCHEDULE=FILE     activity to hand out, one record a line (see load_schedule)
//   FAKE_CUPTI_FORCED_FLUSH_SLEEP_MS=N   a forced flush that takes this long (a stuck CUPTI)
//   FAKE_CUPTI_HOLD_BUFFERS=N    at the first flush, asks for N buffers and never returns them
//                                (CUPTI sitting on buffers, e.g. per-thread ones of idle threads)
//
// Activity: records are built as CUDA 13.0 structs in the buffers the injection's request
// callback gives, and handed back through its completion callback when cuptiActivityFlushAll is
// called, once due (at_ms after the first enable); a record marked incomplete=1 only by a forced
// flush. Times come from the registered timestamp callback, else CLOCK_REALTIME (CUPTI's own
// default). FAKE_CUPTI_OLD builds a CUPTI without the timestamp callback, thread id type,
// per-API switches and cuptiSubscribe_v2; FAKE_CUPTI_ANCIENT one without activity buffers.

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cupti.h>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int env_code(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : 0;
}

void log_call(const char* format, ...) {
  const char* path = std::getenv("FAKE_CUPTI_LOG");
  if (path == nullptr || *path == '\0') return;
  char line[512];
  int n = std::snprintf(line, sizeof line, "%d ", int(getpid()));
  va_list args;
  va_start(args, format);
  n += std::vsnprintf(line + n, sizeof line - size_t(n) - 1, format, args);
  va_end(args);
  if (n > int(sizeof line) - 2) n = int(sizeof line) - 2;
  line[n++] = '\n';
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t ignored = write(fd, line, size_t(n));
  (void)ignored;
  close(fd);
}

size_t record_size(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    default: return 0;
  }
}

// One line of the schedule: "<at_ms> <kind> key=value ... [name=rest of the line]".
struct Entry {
  int64_t at_ms = 0;
  std::string kind;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string name;  // kept alive: records point at it, as CUPTI's do at CUPTI's strings

  uint64_t get(const char* key, uint64_t fallback = 0) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return std::strtoull(v.c_str(), nullptr, 0);
    }
    return fallback;
  }
  int64_t get_signed(const char* key, int64_t fallback = 0) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return std::strtoll(v.c_str(), nullptr, 0);
    }
    return fallback;
  }
  std::string text(const char* key) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return v;
    }
    return "";
  }
};

struct Fake {
  std::mutex mutex;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  std::deque<Entry*> pending;  // due in at_ms order
  bool schedule_loaded = false;
  bool started = false;
  int64_t base_mono = 0;  // when the first kind was enabled
  uint64_t base_time = 0;
  size_t dropped = 0;
  bool held = false;
};

Fake& fake() {
  static Fake* f = new Fake;  // never destroyed: the injection may call in during exit
  return *f;
}

void load_schedule(Fake& f) {
  if (f.schedule_loaded) return;
  f.schedule_loaded = true;
  const char* path = std::getenv("FAKE_CUPTI_SCHEDULE");
  if (path == nullptr || *path == '\0') return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto* e = new Entry;
    size_t name_at = line.find(" name=");
    if (name_at != std::string::npos) {
      e->name = line.substr(name_at + 6);
      line.resize(name_at);
    }
    std::istringstream words(line);
    std::string word;
    words >> e->at_ms >> e->kind;
    while (words >> word) {
      size_t eq = word.find('=');
      if (eq != std::string::npos) e->fields.emplace_back(word.substr(0, eq), word.substr(eq + 1));
    }
    f.pending.push_back(e);
  }
}

uint64_t now_time(const Fake& f) {
  return f.timestamp != nullptr ? f.timestamp() : uint64_t(clock_ns(CLOCK_REALTIME));
}

// Builds the record of `e` at `p` (zeroed, record_size bytes); false for a kind it does not make.
bool build(const Fake& f, const Entry& e, uint8_t* p) {
  uint64_t start = f.base_time + uint64_t(e.at_ms) * 1000000 + e.get("start");
  uint64_t end = start + e.get("dur", 1000);
  if (e.get("untimed") != 0) start = end = 0;
  if (e.kind == "kernel") {
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(p);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = start;
    k->end = end;
    k->deviceId = uint32_t(e.get("device"));
    k->contextId = uint32_t(e.get("context", 1));
    k->streamId = uint32_t(e.get("stream", 7));
    k->correlationId = uint32_t(e.get("corr"));
    k->gridX = int32_t(e.get("gx", 1));
    k->gridY = int32_t(e.get("gy", 1));
    k->gridZ = int32_t(e.get("gz", 1));
    k->blockX = int32_t(e.get("bx", 1));
    k->blockY = int32_t(e.get("by", 1));
    k->blockZ = int32_t(e.get("bz", 1));
    k->registersPerThread = uint16_t(e.get("regs"));
    k->staticSharedMemory = int32_t(e.get("ss"));
    k->dynamicSharedMemory = int32_t(e.get("ds"));
    k->name = e.name.c_str();
  } else if (e.kind == "memcpy") {
    auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(p);
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = uint8_t(e.get("copy", CUPTI_ACTIVITY_MEMCPY_KIND_HTOD));
    m->srcKind = uint8_t(e.get("src", CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE));
    m->dstKind = uint8_t(e.get("dst", CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
    m->flags = uint8_t(e.get("flags"));
    m->bytes = e.get("bytes");
    m->start = start;
    m->end = end;
    m->deviceId = uint32_t(e.get("device"));
    m->contextId = uint32_t(e.get("context", 1));
    m->streamId = uint32_t(e.get("stream", 7));
    m->correlationId = uint32_t(e.get("corr"));
  } else if (e.kind == "memcpy2") {
    auto* m = reinterpret_cast<CUpti_ActivityMemcpyPtoP4*>(p);
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    m->copyKind = uint8_t(e.get("copy", CUPTI_ACTIVITY_MEMCPY_KIND_PTOP));
    m->srcKind = uint8_t(e.get("src", CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
    m->dstKind = uint8_t(e.get("dst", CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
    m->bytes = e.get("bytes");
    m->start = start;
    m->end = end;
    m->deviceId = uint32_t(e.get("device"));
    m->contextId = uint32_t(e.get("context", 1));
    m->streamId = uint32_t(e.get("stream", 7));
    m->srcDeviceId = uint32_t(e.get("device"));
    m->dstDeviceId = uint32_t(e.get("peer", 1));
    m->correlationId = uint32_t(e.get("corr"));
  } else if (e.kind == "memset") {
    auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(p);
    m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m->bytes = e.get("bytes");
    m->start = start;
    m->end = end;
    m->deviceId = uint32_t(e.get("device"));
    m->contextId = uint32_t(e.get("context", 1));
    m->streamId = uint32_t(e.get("stream", 7));
    m->correlationId = uint32_t(e.get("corr"));
    m->memoryKind = uint16_t(e.get("mem", CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
  } else if (e.kind == "runtime" || e.kind == "driver") {
    auto* a = reinterpret_cast<CUpti_ActivityAPI*>(p);
    a->kind = e.kind == "runtime" ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    a->cbid = CUpti_CallbackId(e.get("cbid"));
    a->start = start;
    a->end = end;
    a->processId = uint32_t(getpid());
    a->threadId = uint32_t(e.get("tid"));
    a->correlationId = uint32_t(e.get("corr"));
    a->returnValue = uint32_t(e.get("ret"));
  } else if (e.kind == "sync") {
    auto* s = reinterpret_cast<CUpti_ActivitySynchronization2*>(p);
    s->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s->type = CUpti_ActivitySynchronizationType(e.get("type", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE));
    s->start = start;
    s->end = end;
    s->correlationId = uint32_t(e.get("corr"));
    s->contextId = uint32_t(e.get("context", 1));
    int64_t stream = e.get_signed("stream", 7);
    s->streamId = stream < 0 ? CUPTI_SYNCHRONIZATION_INVALID_VALUE : uint32_t(stream);
    s->cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  } else if (e.kind == "overhead") {
    auto* o = reinterpret_cast<CUpti_ActivityOverhead3*>(p);
    o->kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o->overheadKind = CUpti_ActivityOverheadKind(e.get("okind", CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH));
    o->objectKind = CUPTI_ACTIVITY_OBJECT_PROCESS;
    o->start = start;
    o->end = end;
  } else if (e.kind == "device") {
    auto* d = reinterpret_cast<CUpti_ActivityDevice5*>(p);
    d->kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d->id = uint32_t(e.get("id"));
    d->numMultiprocessors = uint32_t(e.get("sms"));
    d->globalMemorySize = e.get("gmem");
    d->computeCapabilityMajor = uint32_t(e.get("major"));
    d->computeCapabilityMinor = uint32_t(e.get("minor"));
    std::string uuid = e.text("uuid");
    for (size_t i = 0; i < 16 && 2 * i + 1 < uuid.size(); ++i) {
      d->uuid.bytes[i] = char(std::strtoul(uuid.substr(2 * i, 2).c_str(), nullptr, 16));
    }
    d->name = e.name.c_str();
  } else if (e.kind == "context") {
    auto* c = reinterpret_cast<CUpti_ActivityContext3*>(p);
    c->kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    c->contextId = uint32_t(e.get("context", 1));
    c->deviceId = uint32_t(e.get("device"));
  } else if (e.kind == "name") {
    auto* n = reinterpret_cast<CUpti_ActivityName*>(p);
    n->kind = CUPTI_ACTIVITY_KIND_NAME;
    n->name = e.name.c_str();
  } else {
    return false;
  }
  return true;
}

uint32_t kind_of(const std::string& kind) {
  if (kind == "kernel") return CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  if (kind == "memcpy") return CUPTI_ACTIVITY_KIND_MEMCPY;
  if (kind == "memcpy2") return CUPTI_ACTIVITY_KIND_MEMCPY2;
  if (kind == "memset") return CUPTI_ACTIVITY_KIND_MEMSET;
  if (kind == "runtime") return CUPTI_ACTIVITY_KIND_RUNTIME;
  if (kind == "driver") return CUPTI_ACTIVITY_KIND_DRIVER;
  if (kind == "sync") return CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  if (kind == "overhead") return CUPTI_ACTIVITY_KIND_OVERHEAD;
  if (kind == "device") return CUPTI_ACTIVITY_KIND_DEVICE;
  if (kind == "context") return CUPTI_ACTIVITY_KIND_CONTEXT;
  if (kind == "name") return CUPTI_ACTIVITY_KIND_NAME;
  return 0;
}

// Hands every due record to the injection: fills buffers from its request callback and gives
// each back through its completion callback, as CUPTI does on a flush.
void deliver(Fake& f, bool forced) {
  if (!f.started || f.request == nullptr || f.complete == nullptr) return;
  if (!f.held) {
    f.held = true;
    for (int i = env_code("FAKE_CUPTI_HOLD_BUFFERS"); i > 0; --i) {
      uint8_t* held = nullptr;
      size_t size = 0, max_records = 0;
      f.request(&held, &size, &max_records);
    }
  }
  int64_t elapsed_ms = (clock_ns(CLOCK_MONOTONIC) - f.base_mono) / 1000000;
  uint8_t* buffer = nullptr;
  size_t size = 0, used = 0;
  std::deque<Entry*> keep;
  while (!f.pending.empty()) {
    Entry* e = f.pending.front();
    if (e->at_ms > elapsed_ms) break;
    f.pending.pop_front();
    if (e->get("incomplete") != 0 && !forced) {
      keep.push_back(e);
      continue;
    }
    if (e->kind == "dropped") {
      f.dropped += e->get("count");
      continue;
    }
    size_t need = record_size(kind_of(e->kind));
    if (need == 0) continue;
    if (buffer != nullptr && used + need > size) {
      f.complete(nullptr, 0, buffer, size, used);
      buffer = nullptr;
    }
    if (buffer == nullptr) {
      size_t max_records = 0;
      f.request(&buffer, &size, &max_records);
      used = 0;
      if (buffer == nullptr || size < need || (reinterpret_cast<uintptr_t>(buffer) & 7) != 0) {
        log_call("bad_buffer");
        buffer = nullptr;
        ++f.dropped;
        continue;
      }
    }
    std::memset(buffer + used, 0, need);
    if (build(f, *e, buffer + used)) used += need;
  }
  if (buffer != nullptr) f.complete(nullptr, 0, buffer, size, used);
  // Incomplete records wait for a forced flush, ahead of later ones.
  while (!keep.empty()) {
    f.pending.push_front(keep.back());
    keep.pop_back();
  }
}

const char* result_name(CUptiResult r) {
  switch (int(r)) {
    case 0: return "CUPTI_SUCCESS";
    case 12: return "CUPTI_ERROR_MAX_LIMIT_REACHED";
    case 15: return "CUPTI_ERROR_NOT_INITIALIZED";
    case 21: return "CUPTI_ERROR_INVALID_KIND";
    case 35: return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
    case 39: return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case 999: return "CUPTI_ERROR_UNKNOWN";
    default: return nullptr;
  }
}

bool kind_fails(CUpti_ActivityKind kind) {
  const char* kinds = std::getenv("FAKE_CUPTI_ENABLE_KINDS");
  if (kinds == nullptr || *kinds == '\0') return true;
  std::string list = std::string(",") + kinds + ",";
  return list.find("," + std::to_string(int(kind)) + ",") != std::string::npos;
}

}  // namespace

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  const char* v = std::getenv("FAKE_CUPTI_VERSION");
  *version = v != nullptr ? uint32_t(std::atoi(v)) : 130001;
  log_call("get_version");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result_name(result);
  return *str != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

#if !defined(FAKE_CUPTI_OLD) && !defined(FAKE_CUPTI_ANCIENT)
FAKE_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*,
                                          CUpti_SubscriberParams* params) {
  CUptiResult r = CUptiResult(env_code("FAKE_CUPTI_SUBSCRIBE"));
  log_call("subscribe_v2 %s %d", params != nullptr && params->subscriberName != nullptr ? params->subscriberName : "-",
           int(r));
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && params != nullptr && params->oldSubscriberName != nullptr) {
    const char* other = std::getenv("FAKE_CUPTI_OTHER");
    std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", other != nullptr ? other : "nsys");
  }
  if (r == CUPTI_SUCCESS) *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&fake());
  return r;
}
#endif

FAKE_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*) {
  CUptiResult r = CUptiResult(env_code("FAKE_CUPTI_SUBSCRIBE"));
  log_call("subscribe %d", int(r));
  if (r == CUPTI_SUCCESS) *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&fake());
  return r;
}

FAKE_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  log_call("unsubscribe");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiFinalize() {
  log_call("finalize");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetLastError() {
  log_call("get_last_error");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = uint64_t(clock_ns(CLOCK_REALTIME));  // CUPTI's default clock
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  static const struct {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
    const char* name;
  } kNames[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel_v7000"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync_v3020"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync_v3020"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize_v3020"},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx"},
  };
  for (const auto& n : kNames) {
    if (n.domain == domain && n.cbid == cbid) {
      *name = n.name;
      return CUPTI_SUCCESS;
    }
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

#if !defined(FAKE_CUPTI_OLD) && !defined(FAKE_CUPTI_ANCIENT)
FAKE_EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  log_call("thread_id_type %d", int(type));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback) {
  CUptiResult r = CUptiResult(env_code("FAKE_CUPTI_TIMESTAMP_CALLBACK"));
  log_call("timestamp_callback %d", int(r));
  if (r == CUPTI_SUCCESS) {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().timestamp = callback;
  }
  return r;
}

FAKE_EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  log_call("runtime_api %u %d", cbid, int(enable));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  log_call("driver_api %u %d", cbid, int(enable));
  return CUPTI_SUCCESS;
}
#endif

FAKE_EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attribute, size_t* size, void* value) {
  log_call("attribute %d %zu", int(attribute), *size == sizeof(size_t) ? *static_cast<size_t*>(value) : size_t(0));
  return CUPTI_SUCCESS;
}

#if !defined(FAKE_CUPTI_ANCIENT)
FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                       CUpti_BuffersCallbackCompleteFunc complete) {
  CUptiResult r = CUptiResult(env_code("FAKE_CUPTI_REGISTER_CALLBACKS"));
  log_call("register_callbacks %d", int(r));
  if (r == CUPTI_SUCCESS) {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().request = request;
    fake().complete = complete;
  }
  return r;
}
#endif

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  CUptiResult r = kind_fails(kind) ? CUptiResult(env_code("FAKE_CUPTI_ENABLE")) : CUPTI_SUCCESS;
  log_call("enable %d %d", int(kind), int(r));
  if (r == CUPTI_SUCCESS) {
    Fake& f = fake();
    std::lock_guard<std::mutex> lock(f.mutex);
    if (!f.started) {
      f.started = true;
      load_schedule(f);
      f.base_mono = clock_ns(CLOCK_MONOTONIC);
      f.base_time = now_time(f);
    }
  }
  return r;
}

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  log_call("disable %d", int(kind));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  log_call("flush %u", flag);
  Fake& f = fake();
  bool forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
  if (forced) {
    if (int ms = env_code("FAKE_CUPTI_FORCED_FLUSH_SLEEP_MS"); ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
  }
  std::lock_guard<std::mutex> lock(f.mutex);
  deliver(f, forced);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  *dropped = f.dropped;  // reset on read, as CUPTI's count is
  f.dropped = 0;
  return CUPTI_SUCCESS;
}

// Walks the fake's own buffers with the CUDA 13.0 sizes.
FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t* p = buffer;
  if (*record != nullptr) {
    auto* current = reinterpret_cast<uint8_t*>(*record);
    p = current + record_size(uint32_t((*record)->kind));
  }
  if (p + sizeof(uint32_t) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  uint32_t kind = 0;
  std::memcpy(&kind, p, sizeof kind);
  size_t size = record_size(kind);
  if (size == 0 || p + size > buffer + valid) return CUPTI_ERROR_INVALID_KIND;
  *record = reinterpret_cast<CUpti_Activity*>(p);
  return CUPTI_SUCCESS;
}
