// `sprof sysmon`: what the system monitor costs when it runs alone (scripts/bench-sysmon).

#include <sys/resource.h>

#include <chrono>
#include <thread>

#include "sprof/sysmon.hpp"

namespace sprof::sysmon {
namespace {

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace

Result<MonitorCost> measure_monitor(const MonitorOptions& options, double duration_s) {
  if (!(duration_s > 0)) return make_error(ErrorKind::usage, "--duration must be positive");
  SPROF_TRY(auto monitor, SystemMonitor::create(options));
  const double cpu_before = process_cpu_seconds();
  SPROF_TRY_STATUS(monitor->start());
  std::this_thread::sleep_for(std::chrono::duration<double>(duration_s));
  SPROF_TRY_STATUS(monitor->stop());
  return MonitorCost{monitor->stats(), process_cpu_seconds() - cpu_before};
}

}  // namespace sprof::sysmon
