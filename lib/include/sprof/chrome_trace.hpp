#pragma once
// One Chrome trace (Trace Event Format JSON) of a recorded profile, in kineto's conventions so
// that Perfetto, chrome://tracing and HTA read it: GPU work on pid = device, tid = stream
// (cat kernel, gpu_memcpy, gpu_memset), CUDA calls on OS pid/tid (cuda_runtime, cuda_driver),
// host syncs (cuda_sync), "ac2g" flow arrows from each launch to its work, deviceProperties and
// distributedInfo at the top; plus sprof's rows: the steps (Step:ModeKeys.<MODE>, as smdebug
// names them) on the thread that ran them, and the sampled Python stacks as slices on their
// threads (consecutive samples that share a frame merge into one slice).

#include <cstdint>
#include <optional>
#include <utility>
#include <string>

#include "sprof/gpu_trace.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/sample_filter.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::report {

struct ChromeTraceParts {
  const store::ProfileSamples* samples = nullptr;  // sampled stacks; null: none
  const store::GpuTrace* gpu = nullptr;            // GPU activity (CLOCK_MONOTONIC); null: none
  const timeline::StepTimeline* steps = nullptr;   // null: none
  query::SampleFilter filter;                      // which samples become slices
  // Only steps, CUDA calls and GPU work that overlap [first, second) (CLOCK_MONOTONIC ns); unset: all.
  std::optional<std::pair<int64_t, int64_t>> range_ns;
  int64_t epoch_offset_ns = 0;                     // epoch ns = CLOCK_MONOTONIC ns + this
};

struct ChromeTraceCounts {
  uint64_t events = 0;
  uint64_t python_slices = 0;
  uint64_t gpu_ops = 0;
  uint64_t api_calls = 0;
  uint64_t flows = 0;
  uint64_t steps = 0;
  uint64_t annotations = 0;  // the API's tasks, frames, events, markers and counters
};

// Appends the whole JSON document to `out`. Timestamps are µs (3 decimals) since the epoch.
ChromeTraceCounts write_chrome_trace(const ChromeTraceParts& parts, std::string& out);

// Perfetto draws GPU rows after the CPU ones when their pid sorts last; kineto uses the bare
// device id, which can collide with a real pid in a container, so sprof offsets it (HTA finds GPU
// events by their "stream" arg, not by pid).
inline constexpr int64_t kGpuPidBase = 1'000'000'000;

}  // namespace sprof::report
