#pragma once
// NVML through dlopen: sprof has no link-time dependency on the NVIDIA driver. Only the handful of
// calls the monitor needs, declared here with NVML's C types (nvml.h is not needed to build).

#include <optional>
#include <string>
#include <vector>

namespace sprof::sysmon {

struct GpuSample {
  double utilization = 0;         // % of time a kernel ran (nvmlDeviceGetUtilizationRates.gpu)
  double memory_used_percent = 0; // used / total · 100 (nvmlDeviceGetMemoryInfo)
};

class Nvml {
 public:
  // Loads libnvidia-ml.so.1 and initialises it; nullopt with the reason in `why` when it cannot.
  static std::optional<Nvml> open(std::string& why, const char* library = "libnvidia-ml.so.1");
  Nvml(Nvml&& other) noexcept;
  Nvml& operator=(Nvml&&) = delete;
  Nvml(const Nvml&) = delete;
  ~Nvml();

  int device_count() const { return static_cast<int>(devices_.size()); }
  // Samples one device; nullopt when NVML reports an error for it this time.
  std::optional<GpuSample> sample(int index) const;

 private:
  Nvml() = default;
  using Device = void*;
  void* library_ = nullptr;
  int (*shutdown_)() = nullptr;
  int (*utilization_)(Device, void*) = nullptr;
  int (*memory_)(Device, void*) = nullptr;
  std::vector<Device> devices_;
};

}  // namespace sprof::sysmon
