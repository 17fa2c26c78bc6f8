// sprof dump's read: all stacks once, again while a non-blocking read tears one.

#include <time.h>

#include "sprof/clock.hpp"
#include "sprof/pyframes.hpp"

namespace sprof::pyframes {
namespace {

// Wall and CPU time of the reading thread, to report what one read costs.
struct Clocks {
  int64_t wall_ns = 0;
  int64_t cpu_ns = 0;
  static Clocks now() { return {monotonic_ns(), thread_cpu_ns()}; }
};

}  // namespace

Result<StackSnapshot> read_snapshot(PythonProcess& process, const SampleOptions& options, int retries) {
  StackSnapshot snapshot;
  Clocks before = Clocks::now();
  SPROF_TRY_STATUS(process.sample(options, snapshot.stacks, snapshot.stats));
  Clocks after = Clocks::now();
  snapshot.wall_us = static_cast<double>(after.wall_ns - before.wall_ns) / 1000.0;
  snapshot.cpu_us = static_cast<double>(after.cpu_ns - before.cpu_ns) / 1000.0;
  for (int retry = 0; snapshot.stats.invalid > 0 && retry < retries; ++retry) {
    ReadStats again;
    SPROF_TRY_STATUS(process.sample(options, snapshot.stacks, again));
    snapshot.stats.thread_samples += again.thread_samples;
    snapshot.stats.retried += again.retried;
    snapshot.stats.invalid = again.invalid;
  }
  return snapshot;
}

}  // namespace sprof::pyframes
