#include "sysmon/nvml.hpp"

#include <dlfcn.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace sprof::sysmon {
namespace {

// NVML's structs (nvml.h): nvmlUtilization_t and nvmlMemory_t.
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

constexpr int kNvmlSuccess = 0;

}  // namespace

std::optional<Nvml> Nvml::open(std::string& why, const char* library) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    // On a CPU-only machine this is expected: say it in words, keep the loader's text for -v.
    const char* error = dlerror();
    spdlog::debug("dlopen {}: {}", library, error != nullptr ? error : "failed");
    why = fmt::format("no NVIDIA driver on this machine ({} not found)", library);
    return std::nullopt;
  }
  auto symbol = [&](const char* name) { return dlsym(handle, name); };
  auto init = reinterpret_cast<int (*)()>(symbol("nvmlInit_v2"));
  auto count = reinterpret_cast<int (*)(unsigned int*)>(symbol("nvmlDeviceGetCount_v2"));
  auto by_index = reinterpret_cast<int (*)(unsigned int, void**)>(symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto error_string = reinterpret_cast<const char* (*)(int)>(symbol("nvmlErrorString"));
  Nvml nvml;
  nvml.library_ = handle;
  nvml.shutdown_ = reinterpret_cast<int (*)()>(symbol("nvmlShutdown"));
  nvml.utilization_ = reinterpret_cast<int (*)(Device, void*)>(symbol("nvmlDeviceGetUtilizationRates"));
  nvml.memory_ = reinterpret_cast<int (*)(Device, void*)>(symbol("nvmlDeviceGetMemoryInfo"));
  if (!init || !count || !by_index || !nvml.shutdown_ || !nvml.utilization_ || !nvml.memory_) {
    why = fmt::format("{} lacks the NVML functions sprof uses", library);
    nvml.shutdown_ = nullptr;
    return std::nullopt;  // ~Nvml closes the library
  }
  auto describe = [&](int rc) { return error_string ? std::string(error_string(rc)) : fmt::format("error {}", rc); };
  if (int rc = init(); rc != kNvmlSuccess) {
    nvml.shutdown_ = nullptr;
    why = fmt::format("nvmlInit failed: {}", describe(rc));
    return std::nullopt;
  }
  unsigned int n = 0;
  if (int rc = count(&n); rc != kNvmlSuccess) {
    why = fmt::format("nvmlDeviceGetCount failed: {}", describe(rc));
    return std::nullopt;
  }
  for (unsigned int i = 0; i < n; ++i) {
    void* device = nullptr;
    if (int rc = by_index(i, &device); rc != kNvmlSuccess) {
      why = fmt::format("nvmlDeviceGetHandleByIndex({}) failed: {}", i, describe(rc));
      return std::nullopt;
    }
    nvml.devices_.push_back(device);
  }
  if (nvml.devices_.empty()) {
    why = "NVML found no GPU";
    return std::nullopt;
  }
  return std::optional<Nvml>(std::move(nvml));
}

Nvml::Nvml(Nvml&& other) noexcept
    : library_(other.library_),
      shutdown_(other.shutdown_),
      utilization_(other.utilization_),
      memory_(other.memory_),
      devices_(std::move(other.devices_)) {
  other.library_ = nullptr;
  other.shutdown_ = nullptr;
}

Nvml::~Nvml() {
  if (shutdown_ != nullptr) shutdown_();
  if (library_ != nullptr) dlclose(library_);
}

std::optional<GpuSample> Nvml::sample(int index) const {
  if (index < 0 || index >= device_count()) return std::nullopt;
  NvmlUtilization utilization{};
  NvmlMemory memory{};
  if (utilization_(devices_[index], &utilization) != kNvmlSuccess) return std::nullopt;
  if (memory_(devices_[index], &memory) != kNvmlSuccess || memory.total == 0) return std::nullopt;
  GpuSample s;
  s.utilization = utilization.gpu;
  s.memory_used_percent = 100.0 * static_cast<double>(memory.used) / static_cast<double>(memory.total);
  return s;
}

}  // namespace sprof::sysmon
