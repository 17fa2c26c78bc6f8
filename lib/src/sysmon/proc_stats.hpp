#pragma once
// Parsers for the /proc files the system monitor samples, and the counters it keeps between ticks.
// Pure functions of the file text, so tests can feed them fabricated contents.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sprof::sysmon {

// One "cpuN" line of /proc/stat, in clock ticks.
struct CpuTimes {
  std::string name;  // "cpu0"
  uint64_t busy = 0;    // everything but idle and iowait
  uint64_t iowait = 0;
  uint64_t total = 0;   // user+nice+system+idle+iowait+irq+softirq+steal (guest is inside user)
};
std::vector<CpuTimes> parse_proc_stat_cpus(std::string_view text);

// 100 · (MemTotal − MemAvailable) / MemTotal from /proc/meminfo.
std::optional<double> parse_memory_used_percent(std::string_view text);

struct DiskTotals {
  uint64_t ios = 0;          // reads + writes completed
  uint64_t read_bytes = 0;   // sectors read · 512
  uint64_t write_bytes = 0;
};
// Sums the devices named in `devices` (whole disks) from /proc/diskstats.
DiskTotals parse_diskstats(std::string_view text, const std::vector<std::string>& devices);
// Whole disks worth counting: the entries of /sys/block, without loop, ram, zram, device-mapper,
// md RAID and optical/floppy devices (they would count the same I/O twice or none at all).
bool is_counted_disk(std::string_view name);

struct NetTotals {
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
};
// Sums every interface of /proc/net/dev but "lo".
NetTotals parse_net_dev(std::string_view text);

// The fields of /proc/<pid>/stat the monitor uses.
struct PidStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  uint64_t cpu_ticks = 0;   // utime + stime
  uint64_t child_ticks = 0; // cutime + cstime: children it has waited for
  uint64_t start_time = 0;  // clock ticks after boot; tells a reused pid apart
  int64_t rss_pages = 0;
};
std::optional<PidStat> parse_pid_stat(std::string_view text);

// The root and its descendants (by ppid) among `all`.
std::vector<const PidStat*> process_tree(const std::vector<PidStat>& all, pid_t root);

// CPU time of a process tree between two samples, counted as the kernel does for os.times(): each
// member's own time plus that of the children it has waited for. A process seen for the first time
// contributes all of that (it started since the last tick, or just joined the tree). A child that
// lived and was reaped between two ticks is never seen, but its time arrives in its parent's
// cutime; one that was seen and then reaped has its time already counted, so what it had at its last
// sighting is taken back from the parent's increase.
class TreeCpuCounter {
 public:
  // Returns the CPU ticks the tree used since the previous call.
  uint64_t update(const std::vector<const PidStat*>& tree);

 private:
  struct Seen {
    uint64_t start_time;
    uint64_t total;  // cpu_ticks + child_ticks
  };
  std::unordered_map<pid_t, Seen> last_;
  bool first_ = true;
};

}  // namespace sprof::sysmon
