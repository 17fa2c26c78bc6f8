#include "gpu/injection/cupti_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

namespace sprof::gpu::injection {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

std::string loaded_path(void* handle, const char* fallback) {
  void* symbol = dlsym(handle, "cuptiGetVersion");
  Dl_info info{};
  if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return fallback;
}

// The directory of a loaded libtorch_cuda.so (torch/lib), if torch's CUDA part is in the process.
std::string torch_lib_dir() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (name.find("libtorch_cuda.so") == std::string_view::npos) return 0;
        *static_cast<std::string*>(data) = fs::path(name).parent_path().string();
        return 1;
      },
      &found);
  return found;
}

// CUPTI files a CUDA build of torch ships: site-packages/nvidia/cuda_cupti/lib (the CUDA 12
// wheel torch depends on), nvidia/cu13/lib (CUDA 13 wheels) or torch/lib itself.
std::vector<std::string> torch_cupti_candidates(const std::string& torch_lib) {
  std::vector<std::string> out;
  if (torch_lib.empty()) return out;
  for (const fs::path& dir : {fs::path(torch_lib) / ".." / ".." / "nvidia" / "cuda_cupti" / "lib",
                              fs::path(torch_lib) / ".." / ".." / "nvidia" / "cu13" / "lib", fs::path(torch_lib)}) {
    for (const char* soname : kSonames) {
      std::error_code ec;
      fs::path candidate = (dir / soname).lexically_normal();
      if (fs::exists(candidate, ec)) out.push_back(candidate.string());
    }
  }
  return out;
}

bool resolve(LoadedCupti& out, std::string& error) {
  auto sym = [&](const char* name) { return dlsym(out.handle, name); };
  out.fn.get_version = reinterpret_cast<decltype(out.fn.get_version)>(sym("cuptiGetVersion"));
  out.fn.get_result_string = reinterpret_cast<decltype(out.fn.get_result_string)>(sym("cuptiGetResultString"));
  out.fn.subscribe_v2 = reinterpret_cast<decltype(out.fn.subscribe_v2)>(sym("cuptiSubscribe_v2"));
  out.fn.subscribe = reinterpret_cast<decltype(out.fn.subscribe)>(sym("cuptiSubscribe"));
  out.fn.unsubscribe = reinterpret_cast<decltype(out.fn.unsubscribe)>(sym("cuptiUnsubscribe"));
#define SPROF_RESOLVE(member, name) out.fn.member = reinterpret_cast<decltype(out.fn.member)>(sym(name))
  SPROF_RESOLVE(activity_register_callbacks, "cuptiActivityRegisterCallbacks");
  SPROF_RESOLVE(activity_enable, "cuptiActivityEnable");
  SPROF_RESOLVE(activity_flush_all, "cuptiActivityFlushAll");
  SPROF_RESOLVE(activity_get_next_record, "cuptiActivityGetNextRecord");
  SPROF_RESOLVE(activity_disable, "cuptiActivityDisable");
  SPROF_RESOLVE(activity_set_attribute, "cuptiActivitySetAttribute");
  SPROF_RESOLVE(activity_enable_runtime_api, "cuptiActivityEnableRuntimeApi");
  SPROF_RESOLVE(activity_enable_driver_api, "cuptiActivityEnableDriverApi");
  SPROF_RESOLVE(activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
  SPROF_RESOLVE(activity_register_timestamp_callback, "cuptiActivityRegisterTimestampCallback");
  SPROF_RESOLVE(set_thread_id_type, "cuptiSetThreadIdType");
  SPROF_RESOLVE(get_timestamp, "cuptiGetTimestamp");
  SPROF_RESOLVE(get_callback_name, "cuptiGetCallbackName");
  SPROF_RESOLVE(get_last_error, "cuptiGetLastError");
#undef SPROF_RESOLVE
  if (out.fn.get_version == nullptr || out.fn.unsubscribe == nullptr ||
      (out.fn.subscribe_v2 == nullptr && out.fn.subscribe == nullptr)) {
    error = out.path + " lacks cuptiGetVersion, cuptiSubscribe or cuptiUnsubscribe: not a CUPTI library";
    return false;
  }
  return true;
}

bool try_open(LoadedCupti& out, const std::string& name, const char* source, int flags, std::string& tried) {
  void* handle = dlopen(name.c_str(), flags);
  if (handle == nullptr) {
    if ((flags & RTLD_NOLOAD) == 0) {
      const char* why = dlerror();
      tried += "; " + name + ": " + (why != nullptr ? why : "cannot be loaded");
    }
    return false;
  }
  out.handle = handle;
  out.path = loaded_path(handle, name.c_str());
  out.source = source;
  return true;
}

}  // namespace

bool load_cupti(LoadedCupti& out, std::string& error) {
  std::string tried;
  bool loaded = false;
  for (const char* soname : kSonames) {
    if ((loaded = try_open(out, soname, "already_loaded", RTLD_NOW | RTLD_NOLOAD, tried))) break;
  }
  if (!loaded) {
    if (const char* forced = std::getenv("SPROF_CUPTI_PATH"); forced != nullptr && *forced != '\0') {
      // Forced: no fallback, so that a wrong --cupti is said rather than silently replaced.
      if (!try_open(out, forced, "SPROF_CUPTI_PATH", RTLD_NOW | RTLD_LOCAL, tried)) {
        error = "cannot load the CUPTI given by --cupti" + tried;
        return false;
      }
      loaded = true;
    }
  }
  if (!loaded) {
    for (const std::string& candidate : torch_cupti_candidates(torch_lib_dir())) {
      if ((loaded = try_open(out, candidate, "torch", RTLD_NOW | RTLD_LOCAL, tried))) break;
    }
  }
  if (!loaded) {
    for (const char* soname : kSonames) {
      if ((loaded = try_open(out, soname, "system", RTLD_NOW | RTLD_LOCAL, tried))) break;
    }
  }
  if (!loaded) {
    error = "no libcupti could be loaded" + tried;
    return false;
  }
  return resolve(out, error);
}

std::string missing_for_recording(const CuptiFunctions& fn) {
  std::string missing;
  auto need = [&](const void* f, const char* name) {
    if (f != nullptr) return;
    if (!missing.empty()) missing += ", ";
    missing += name;
  };
  need(reinterpret_cast<const void*>(fn.activity_register_callbacks), "cuptiActivityRegisterCallbacks");
  need(reinterpret_cast<const void*>(fn.activity_enable), "cuptiActivityEnable");
  need(reinterpret_cast<const void*>(fn.activity_flush_all), "cuptiActivityFlushAll");
  need(reinterpret_cast<const void*>(fn.activity_get_next_record), "cuptiActivityGetNextRecord");
  return missing;
}

std::string result_text(const CuptiFunctions& fn, CUptiResult result) {
  const char* text = nullptr;
  if (fn.get_result_string != nullptr && fn.get_result_string(result, &text) == CUPTI_SUCCESS && text != nullptr) {
    return text;
  }
  return "CUPTI error " + std::to_string(int(result));
}

void describe_failure(const CuptiFunctions& fn, CUptiResult result, const std::string& from, const std::string& step,
                      const char* other_tool, std::string& state, std::string& detail) {
  switch (result) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      state = "other_tool_attached";
      detail = from + ": another CUPTI tool owns this process (" +
               (other_tool != nullptr && other_tool[0] != '\0' ? other_tool
                                                               : "nsys, ncu, compute-sanitizer or torch.profiler") +
               ")";
      break;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      state = "insufficient_privileges";
      detail = from + ": not allowed to profile the GPU (run as root, or load the driver with "
               "NVreg_RestrictProfilingToAdminUsers=0; in a container add --cap-add SYS_ADMIN)";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED:
      state = "driver_too_old";
      detail = from + " could not initialise: the driver is probably older than this CUPTI "
               "(--cupti PATH chooses another libcupti)";
      break;
    default:
      state = "cupti_error";
      detail = from + ": " + step + " failed: " + result_text(fn, result);
      break;
  }
}

}  // namespace sprof::gpu::injection
