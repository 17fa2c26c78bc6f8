// libsprof_cupti.so: what the CUDA driver loads when `sprof record` sets CUDA_INJECTION64_PATH.
// The driver calls InitializeInjection while it initialises (inside cuInit, usually on a Python
// thread holding the GIL), so this code must be quick, must not call CUDA, throw, exit or
// abort, and must let training go on whatever fails. It finds the process's CUPTI, checks that
// CUPTI can take this process (a driver, privileges, no other CUPTI tool such as nsys), and
// writes what it found to $SPROF_GPU_DIR/<pid>.json for `record` to report once.
// Recording GPU activity through the subscription is the next part of the GPU issue; until then
// the subscription is released at once so that other tools (torch.profiler) keep CUPTI.

#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpu/injection/cupti_library.hpp"

namespace sprof::gpu::injection {
namespace {

struct ProcessState {
  std::string state;  // see sprof/gpu.hpp: GpuProcessState
  std::string detail;
  std::string cupti;
  std::string cupti_source;
  uint32_t cupti_version = 0;
};

void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One JSON object per process, written to a temporary file and renamed, so that a reader never
// sees half of one. Failures are silent: there is nowhere else to say them without touching the
// target's output.
void write_state(const char* dir, const ProcessState& s) {
  std::string json = "{\"pid\": " + std::to_string(getpid()) + ", \"state\": ";
  append_json_string(json, s.state);
  json += ", \"detail\": ";
  append_json_string(json, s.detail);
  json += ", \"cupti\": ";
  append_json_string(json, s.cupti);
  json += ", \"cupti_source\": ";
  append_json_string(json, s.cupti_source);
  json += ", \"cupti_version\": " + std::to_string(s.cupti_version);
  json += ", \"monotonic_ns\": " + std::to_string(monotonic_ns()) + "}\n";

  std::string path = std::string(dir) + "/" + std::to_string(getpid()) + ".json";
  std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < json.size()) {
    ssize_t n = ::write(fd, json.data() + done, json.size() - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  ::close(fd);
  if (done == json.size()) {
    ::rename(temp.c_str(), path.c_str());
  } else {
    ::unlink(temp.c_str());
  }
}

void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

std::string version_text(uint32_t v) {
  // CUPTI_API_VERSION is xxyyzz since 13.0 (130001 = 13.0 update 1); a small number before.
  if (v >= 100000) return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100);
  return "API " + std::to_string(v);
}

ProcessState inspect() {
  ProcessState s;
  // The driver: loaded already when cuInit called us; loading it here only happens in tests.
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) {
    const char* why = dlerror();
    s.state = "no_driver";
    s.detail = std::string("libcuda.so.1 cannot be loaded (no NVIDIA driver): ") + (why != nullptr ? why : "");
    return s;
  }
  Dl_info info{};
  void* cu_init = dlsym(cuda, "cuInit");
  if (cu_init != nullptr && dladdr(cu_init, &info) != 0 && info.dli_fname != nullptr &&
      std::string(info.dli_fname).find("/stubs/") != std::string::npos) {
    s.state = "stub_driver";
    s.detail = std::string("libcuda.so.1 is the CUDA toolkit's link stub (") + info.dli_fname +
               "), not a driver: take the toolkit's lib/stubs off LD_LIBRARY_PATH";
    return s;
  }

  LoadedCupti cupti;
  std::string error;
  if (!load_cupti(cupti, error)) {
    s.state = cupti.handle != nullptr ? "not_cupti" : "cupti_missing";
    s.detail = error;
    s.cupti = cupti.path;
    s.cupti_source = cupti.source;
    return s;
  }
  s.cupti = cupti.path;
  s.cupti_source = cupti.source;
  if (cupti.fn.get_version(&s.cupti_version) != CUPTI_SUCCESS) s.cupti_version = 0;

  CUpti_SubscriberHandle subscriber = nullptr;
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUptiResult r;
  if (cupti.fn.subscribe_v2 != nullptr) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "sprof";
    params.oldSubscriberName = other;
    params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
    r = cupti.fn.subscribe_v2(&subscriber, ignore_callback, nullptr, &params);
  } else {
    r = cupti.fn.subscribe(&subscriber, ignore_callback, nullptr);
  }
  std::string from = "CUPTI " + version_text(s.cupti_version) + " (" + s.cupti + ")";
  switch (r) {
    case CUPTI_SUCCESS:
      cupti.fn.unsubscribe(subscriber);
      s.state = "available";
      s.detail = from + " can trace this process; this sprof does not record GPU activity yet";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      s.state = "other_tool_attached";
      s.detail = from + ": another CUPTI tool owns this process (" + (other[0] != '\0' ? other : "nsys, ncu, "
                 "compute-sanitizer or torch.profiler") + ")";
      break;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      s.state = "insufficient_privileges";
      s.detail = from + ": not allowed to profile the GPU (run as root, or load the driver with "
                 "NVreg_RestrictProfilingToAdminUsers=0; in a container add --cap-add SYS_ADMIN)";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED:
      s.state = "driver_too_old";
      s.detail = from + " could not initialise: the driver is probably older than this CUPTI "
                 "(--cupti PATH chooses another libcupti)";
      break;
    default:
      s.state = "cupti_error";
      s.detail = from + ": subscribing failed: " + result_text(cupti.fn, r);
      break;
  }
  return s;
}

}  // namespace
}  // namespace sprof::gpu::injection

// Idempotent and thread-safe: the first caller inspects, later and concurrent callers return at
// once. Always 1 (success) so that the driver carries on, whatever happened here.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return 1;
  const char* dir = std::getenv("SPROF_GPU_DIR");
  if (dir == nullptr || *dir == '\0') return 1;  // loaded outside `sprof record`: stay out of the way
  try {
    sprof::gpu::injection::write_state(dir, sprof::gpu::injection::inspect());
  } catch (...) {
    // Out of memory in a string: nothing to report with.
  }
  return 1;
}
