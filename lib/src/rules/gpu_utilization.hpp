#pragma once
// GPUUtilization from recorded kernels, for profiles whose system metrics have none (no NVML on the
// machine, or a job recorded without system metrics on GPUs): the share of each system-metrics
// tick's interval during which at least one kernel ran on the device, which is what NVML's
// utilisation counter measures. The rules that need GPU utilisation then have it.

#include <cstdint>
#include <vector>

#include "sprof/gpu_trace.hpp"
#include "sprof/system_metrics.hpp"

namespace sprof::rules {

// One "gpu"/"GPUUtilization" metric per device ("gpu<N>", N numbering distinct GPUs by uuid, else
// by ordinal) per tick of each node's CPU metrics: the kernel-busy percentage of (previous tick,
// tick]. `epoch_offset_ns` turns the trace's monotonic ns into epoch ns. Empty when `system`
// already has GPUUtilization, or has no ticks, or the trace no kernels.
std::vector<store::SystemMetric> gpu_utilization_from_kernels(const store::GpuTrace& trace,
                                                              const std::vector<store::SystemMetric>& system,
                                                              int64_t epoch_offset_ns);

}  // namespace sprof::rules
