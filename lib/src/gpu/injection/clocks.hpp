#pragma once
// The two clocks of the GPU activity file: CLOCK_MONOTONIC (every time in it: the sampler's
// clock) and CLOCK_REALTIME (one pair per chunk, for wall-clock display and aligning nodes).

#include <time.h>

#include <cstdint>

namespace sprof::gpu::injection {

inline int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline int64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
inline int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

}  // namespace sprof::gpu::injection
