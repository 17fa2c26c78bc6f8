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

  // Recording. Typed from cupti.h's declarations (only declared, never linked), so that a
  // signature mismatch fails to compile. Required ones: see missing_for_recording.
  decltype(&::cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&::cuptiActivityEnable) activity_enable = nullptr;
  decltype(&::cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&::cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  // Optional: what is missing in an older CUPTI is done without (and said in the state).
  decltype(&::cuptiActivityDisable) activity_disable = nullptr;
  decltype(&::cuptiActivitySetAttribute) activity_set_attribute = nullptr;
  decltype(&::cuptiActivityEnableRuntimeApi) activity_enable_runtime_api = nullptr;
  decltype(&::cuptiActivityEnableDriverApi) activity_enable_driver_api = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records = nullptr;
  decltype(&::cuptiActivityRegisterTimestampCallback) activity_register_timestamp_callback = nullptr;  // CUDA 11.6+
  decltype(&::cuptiSetThreadIdType) set_thread_id_type = nullptr;
  decltype(&::cuptiGetTimestamp) get_timestamp = nullptr;
  decltype(&::cuptiGetCallbackName) get_callback_name = nullptr;
  decltype(&::cuptiGetLastError) get_last_error = nullptr;
};

// The functions recording cannot do without that this CUPTI lacks, comma-separated; "" when
// none is missing.
std::string missing_for_recording(const CuptiFunctions& fn);

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

// The state and one-line detail a failing CUPTI call leaves: other_tool_attached (39, with the
// competing subscriber's name when CUPTI gave it), insufficient_privileges (35), driver_too_old
// (15) or cupti_error. `from` names the CUPTI ("CUPTI 13.0 (/path)"); `step` what failed
// ("subscribing", "enabling activity kinds").
void describe_failure(const CuptiFunctions& fn, CUptiResult result, const std::string& from, const std::string& step,
                      const char* other_tool, std::string& state, std::string& detail);

}  // namespace sprof::gpu::injection
