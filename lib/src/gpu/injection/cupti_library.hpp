#pragma once
// Finding and loading the libcupti the target should use, resolving the few CUPTI functions the
// injection calls with dlsym: libsprof_cupti.so never links libcupti, so one build works with
// the CUPTI a CUDA build of torch ships (12.x or 13.x) as well as the toolkit's.

#include <cstdint>
#include <string>

#include <cupti.h>

namespace sprof::gpu::injection {

struct CuptiFunctions {
  CUptiResult (*get_version)(uint32_t*) = nullptr;
  CUptiResult (*get_result_string)(CUptiResult, const char**) = nullptr;
  CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams*) = nullptr;
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle) = nullptr;
};

struct LoadedCupti {
  void* handle = nullptr;
  std::string path;    // the file loaded (from dladdr), or the name asked for
  std::string source;  // already_loaded | SPROF_CUPTI_PATH | torch | system
  CuptiFunctions fn;
};

// Where the CUPTI comes from, in order: one already in the process (torch's Kineto loaded it);
// SPROF_CUPTI_PATH (`record --cupti`); the one a CUDA build of torch ships beside itself (the
// nvidia-cuda-cupti wheel, or torch/lib); the system's (the loader's search path). On failure
// `error` says what was tried.
bool load_cupti(LoadedCupti& out, std::string& error);

// CUPTI's own words for a result code ("CUPTI_ERROR_...").
std::string result_text(const CuptiFunctions& fn, CUptiResult result);

}  // namespace sprof::gpu::injection
