// `sprof sysmon`: what the system monitor costs when it runs alone (scripts/bench-sysmon).

#include <chrono>
#include <thread>

#include "sprof/clock.hpp"
#include "sprof/sysmon.hpp"

namespace sprof::sysmon {

Result<MonitorCost> measure_monitor(const MonitorOptions& options, double duration_s) {
  if (!(duration_s > 0)) return make_error(ErrorKind::usage, "--duration must be positive");
  SPROF_TRY(auto monitor, SystemMonitor::create(options));
  const int64_t cpu_before = process_cpu_ns();
  SPROF_TRY_STATUS(monitor->start());
  std::this_thread::sleep_for(std::chrono::duration<double>(duration_s));
  SPROF_TRY_STATUS(monitor->stop());
  return MonitorCost{monitor->stats(), double(process_cpu_ns() - cpu_before) / 1e9};
}

}  // namespace sprof::sysmon
