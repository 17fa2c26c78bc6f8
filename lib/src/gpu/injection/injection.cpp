// libsprof_cupti.so: what the CUDA driver loads when `sprof record` sets CUDA_INJECTION64_PATH.
// The driver calls InitializeInjection while it initialises (inside cuInit, usually on a Python
// thread holding the GIL), so this code must be quick, must not call CUDA, throw, exit or
// abort, and must let training go on whatever fails. It finds the process's CUPTI, checks that
// CUPTI can take this process (a driver, privileges, no other CUPTI tool such as nsys), starts
// recording GPU activity to $SPROF_GPU_DIR/<pid>.gpu (activity_recorder.cpp) and writes what it
// found to $SPROF_GPU_DIR/<pid>.json for `record` to report once.

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "gpu/injection/activity_recorder.hpp"
#include "gpu/injection/cupti_library.hpp"
#include "gpu/injection/process_state.hpp"

namespace sprof::gpu::injection {
namespace {

// Activity records need a subscription that no other tool holds; its callbacks are never
// enabled, so this is never called.
void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

std::string version_text(uint32_t v) {
  // CUPTI_API_VERSION is xxyyzz since 13.0 (130001 = 13.0 update 1); a small number before.
  if (v >= 100000) return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100);
  return "API " + std::to_string(v);
}

ProcessState inspect_and_record(const std::string& dir) {
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
  if (r != CUPTI_SUCCESS) {
    describe_failure(cupti.fn, r, from, "subscribing", other, s.state, s.detail);
    return s;
  }
  // The subscription is kept for as long as the process records.
  return start_recording(cupti, subscriber, dir, s, from);
}

}  // namespace
}  // namespace sprof::gpu::injection

// Idempotent and thread-safe: the first caller inspects and starts recording, later and
// concurrent callers return at once. Always 1 (success) so that the driver carries on,
// whatever happened here.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return 1;
  try {
    const char* dir = std::getenv("SPROF_GPU_DIR");
    if (dir == nullptr || *dir == '\0') return 1;  // loaded outside `sprof record`: stay out of the way
    std::string gpu_dir = dir;
    sprof::gpu::injection::write_state(gpu_dir, sprof::gpu::injection::inspect_and_record(gpu_dir));
  } catch (...) {
    // Out of memory in a string: nothing to report with.
  }
  return 1;
}
