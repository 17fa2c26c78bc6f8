#pragma once
// What the injection found in this process, written to $SPROF_GPU_DIR/<pid>.json for `record`
// to report (parsed by gpu_state.cpp: sprof/gpu.hpp's GpuProcessState).

#include <cstdint>
#include <optional>
#include <string>

namespace sprof::gpu::injection {

// Counts of a recording, added to the state when the process exits normally.
struct RecordingCounts {
  uint64_t records = 0;  // records written to <pid>.gpu
  uint64_t chunks = 0;
  uint64_t dropped = 0;  // CUPTI dropped them, or they landed in the discard buffer
  uint64_t untimed = 0;  // start = end = 0: not written
};

struct ProcessState {
  std::string state;  // see sprof/gpu.hpp: GpuProcessState
  std::string detail;
  std::string cupti;
  std::string cupti_source;
  uint32_t cupti_version = 0;
  std::optional<RecordingCounts> counts;
};

// One JSON object, written to a temporary file and renamed so that a reader never sees half of
// one. Failures are silent: there is nowhere else to say them without touching the target's output.
void write_state(const std::string& dir, const ProcessState& state);

}  // namespace sprof::gpu::injection
