// GpuProbe (sprof/sysmon.hpp): NVML for a live view.

#include "sysmon/nvml.hpp"
#include "sprof/sysmon.hpp"

namespace sprof::sysmon {

struct GpuProbe::Impl {
  explicit Impl(Nvml n) : nvml(std::move(n)) {}
  Nvml nvml;
};

GpuProbe::GpuProbe(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuProbe::~GpuProbe() = default;

std::unique_ptr<GpuProbe> GpuProbe::open(std::string& why, const std::string& library) {
  auto nvml = Nvml::open(why, library.c_str());
  if (!nvml) return nullptr;
  if (nvml->device_count() == 0) {
    why = "NVML reports no GPU";
    return nullptr;
  }
  return std::unique_ptr<GpuProbe>(new GpuProbe(std::make_unique<Impl>(std::move(*nvml))));
}

std::vector<GpuReading> GpuProbe::read() const {
  std::vector<GpuReading> readings;
  for (int i = 0; i < impl_->nvml.device_count(); ++i) {
    if (auto s = impl_->nvml.sample(i)) readings.push_back({i, s->utilization, s->memory_used_percent});
  }
  return readings;
}

}  // namespace sprof::sysmon
