#pragma once
// The clocks sprof reads, in nanoseconds: CLOCK_MONOTONIC (samples, markers, steps and GPU work
// share it), CLOCK_REALTIME (to turn it into epoch times) and the CPU time of the calling thread
// or of the whole process (to measure sprof's own costs).

#include <time.h>

#include <cstdint>

namespace sprof {

inline int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
inline int64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
inline int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }
inline int64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
inline int64_t process_cpu_ns() { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }  // all its threads

}  // namespace sprof
