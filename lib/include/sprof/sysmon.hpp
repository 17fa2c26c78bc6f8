#pragma once
// The system monitor `record` runs beside the target: a thread that samples the machine every
// interval and writes SageMaker's system metrics (sprof/system_metrics.hpp), every record of one tick
// sharing one Timestamp. Per tick:
//   cpu      cpu<N>                 CPUUtilization | I/OWaitPercentage   % of that core
//   gpu      gpu<N>                 GPUUtilization | GPUMemoryUtilization % (memory: used / total)
//   memory   MemoryUsedPercent      ""                                   % of host RAM (MemTotal − MemAvailable)
//   i/o      IOPS, ReadThroughputInBytesPerSecond, WriteThroughputInBytesPerSecond   ""   whole disks
//   network  ReceiveBytesPerSecond, TransmitBytesPerSecond   Algorithm   all interfaces but lo
//   process  CPUUtilization, ResidentMemoryBytes, ProcessCount   ProcessTree
//            the root pid and its descendants: CPU in % of one core (can exceed 100), RSS in bytes
// smdebug's readers and rules read the standard records; the "process" records use their own
// dimension, so rules that count cores or GPUs by dimension never see them.
// GPUs come from NVML, loaded with dlopen("libnvidia-ml.so.1"); without it, one info line and no GPU
// records.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sprof/result.hpp"

namespace sprof::sysmon {

// smdebug's ProfilingIntervalInMilliseconds values.
inline constexpr int kAllowedIntervalsMs[] = {100, 200, 500, 1000, 5000, 60000};
inline constexpr int kDefaultIntervalMs = 500;
// A usage error naming --system-interval-ms unless `interval_ms` is one of the allowed values.
Status validate_interval(int interval_ms);

struct MonitorOptions {
  std::filesystem::path profile_dir;  // files go to <profile_dir>/system/incremental/...
  std::string node_id = "algo-1";     // smdebug's reader only accepts algo-<n>
  int interval_ms = kDefaultIntervalMs;
  pid_t root_pid = 0;                 // process tree to measure; 0: no process records
  bool gpu = true;                    // try NVML
  std::string nvml_library = "libnvidia-ml.so.1";  // tests load a stand-in
  std::filesystem::path proc_root = "/proc";  // tests point these at fabricated trees
  std::filesystem::path sys_root = "/sys";
  // Epoch microseconds for the Timestamp of a tick; default CLOCK_REALTIME. record can pass its
  // manifest clock (monotonic + offset) so metrics line up with samples and markers.
  std::function<int64_t()> epoch_us;
};

struct MonitorStats {
  int64_t ticks = 0;           // ticks written
  int64_t thread_cpu_ns = 0;   // CPU time of the sampling thread (CLOCK_THREAD_CPUTIME_ID)
  int64_t wall_ns = 0;         // from start() to stop()
  int gpus = 0;                // GPUs sampled (0 without NVML)
};

class SystemMonitor {
 public:
  // Checks the options (interval, node id) and opens what it samples; no thread yet.
  static Result<std::unique_ptr<SystemMonitor>> create(MonitorOptions options);
  ~SystemMonitor();  // stops
  SystemMonitor(const SystemMonitor&) = delete;
  SystemMonitor& operator=(const SystemMonitor&) = delete;

  // Takes the baseline sample and starts the thread; the first tick is written one interval later.
  Status start();
  // Stops the thread (waking it at once), closes the files and returns the first write error, if any.
  Status stop();
  MonitorStats stats() const;

 private:
  struct Impl;
  explicit SystemMonitor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// `sprof sysmon`: the monitor alone for `duration_s` seconds, and what it cost: its own counts and
// the CPU time of this whole process meanwhile.
struct MonitorCost {
  MonitorStats stats;
  double process_cpu_s = 0;
};
Result<MonitorCost> measure_monitor(const MonitorOptions& options, double duration_s);

// The GPUs now, for a live view (`sprof top`): NVML opened once, read on demand.
struct GpuReading {
  int index = 0;
  double utilization = 0;          // %
  double memory_used_percent = 0;  // %
};

class GpuProbe {
 public:
  // Nothing, with the reason in `why`, when NVML cannot be loaded or has no GPU.
  static std::unique_ptr<GpuProbe> open(std::string& why, const std::string& library = "libnvidia-ml.so.1");
  ~GpuProbe();
  GpuProbe(const GpuProbe&) = delete;
  GpuProbe& operator=(const GpuProbe&) = delete;
  // One reading per GPU that answered.
  std::vector<GpuReading> read() const;

 private:
  struct Impl;
  explicit GpuProbe(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sprof::sysmon
