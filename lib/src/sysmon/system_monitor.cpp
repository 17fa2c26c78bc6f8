// The sampling thread of the system monitor (see sprof/sysmon.hpp).

#include "sprof/sysmon.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <cstdlib>
#include <mutex>
#include <regex>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sprof/system_metrics.hpp"
#include "sysmon/nvml.hpp"
#include "sysmon/proc_stats.hpp"
#include "sprof/clock.hpp"

namespace fs = std::filesystem;

namespace sprof::sysmon {

Status validate_interval(int interval_ms) {
  for (int allowed : kAllowedIntervalsMs) {
    if (interval_ms == allowed) return {};
  }
  return make_error(ErrorKind::usage, "--system-interval-ms {}: must be one of 100, 200, 500, 1000, 5000, 60000",
                    interval_ms);
}

namespace {

int64_t realtime_us() { return realtime_ns() / 1000; }

// A /proc file kept open and re-read from offset 0 each tick (the kernel regenerates it), which
// saves an open and a close per file per tick.
class ProcFile {
 public:
  ProcFile() = default;
  explicit ProcFile(const fs::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ProcFile(ProcFile&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ProcFile& operator=(ProcFile&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~ProcFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  // The whole file into `buffer`; false when it cannot be read.
  bool read(std::string& buffer) const {
    if (fd_ < 0) return false;
    buffer.resize(std::max<size_t>(buffer.capacity(), 16384));
    size_t used = 0;
    while (true) {
      ssize_t n = ::pread(fd_, buffer.data() + used, buffer.size() - used, static_cast<off_t>(used));
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      used += static_cast<size_t>(n);
      if (n == 0 || used < buffer.size()) break;
      buffer.resize(buffer.size() * 2);
    }
    buffer.resize(used);
    return true;
  }

 private:
  int fd_ = -1;
};

}  // namespace

struct SystemMonitor::Impl {
  MonitorOptions options;
  store::SystemMetricsWriter writer;
  ProcFile stat_file, meminfo_file, diskstats_file, netdev_file;
  std::vector<std::string> disks;
  std::optional<Nvml> nvml;
  DIR* proc_dir = nullptr;
  long clock_ticks = sysconf(_SC_CLK_TCK);
  long page_size = sysconf(_SC_PAGESIZE);

  // Counters of the previous tick.
  int64_t last_ns = 0;
  std::vector<CpuTimes> last_cpus;
  DiskTotals last_disk;
  NetTotals last_net;
  TreeCpuCounter tree_cpu;
  std::atomic<pid_t> root_pid{0};

  std::thread thread;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool running = false;
  std::optional<Error> error;
  std::atomic<int64_t> ticks{0};
  std::atomic<int64_t> cpu_ns{0};
  int64_t started_ns = 0;
  int64_t stopped_ns = 0;

  std::string buffer;
  std::vector<PidStat> pids;     // the processes read at the last tick (all of them at a full scan)
  std::unordered_set<pid_t> listed_pids;  // the pids in /proc at the last tick
  std::vector<PidStat> members;  // the tree's processes, refreshed every tick
  pid_t scanned_root = 0;
  int64_t last_scan_ms = 0;

  explicit Impl(MonitorOptions o) : options(std::move(o)), writer(options.profile_dir, options.node_id) {}
  ~Impl() {
    if (proc_dir != nullptr) closedir(proc_dir);
  }

  void open_sources() {
    stat_file = ProcFile(options.proc_root / "stat");
    meminfo_file = ProcFile(options.proc_root / "meminfo");
    diskstats_file = ProcFile(options.proc_root / "diskstats");
    netdev_file = ProcFile(options.proc_root / "net" / "dev");
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(options.sys_root / "block", ec)) {
      std::string name = entry.path().filename().string();
      if (is_counted_disk(name)) disks.push_back(name);
    }
    proc_dir = opendir(options.proc_root.c_str());
  }

  // /proc/<pid>/stat of one process into `out`; false when it is gone.
  bool read_pid(int dir_fd, const char* pid_name, PidStat& out) {
    char path[sizeof(dirent::d_name) + 8];
    char text[1024];
    std::snprintf(path, sizeof path, "%s/stat", pid_name);
    int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) return false;
    auto parsed = parse_pid_stat(std::string_view(text, static_cast<size_t>(n)));
    if (!parsed) return false;
    out = *parsed;
    return true;
  }

  // The process tree of `root`. Reading every process's stat file dominates the monitor's cost, so
  // that full scan runs at most every kRescanMs; in between the known members are re-read and only
  // pids that were not in /proc at the previous tick are looked at, which finds a new child within a
  // tick (this kernel may lack /proc/<pid>/task/<tid>/children, so it cannot be asked directly).
  static constexpr int64_t kRescanMs = 2000;
  std::vector<const PidStat*> read_tree(pid_t root) {
    if (proc_dir == nullptr) return {};
    int dir_fd = dirfd(proc_dir);
    int64_t now_ms = monotonic_ns() / 1000000;
    bool full = root != scanned_root || now_ms - last_scan_ms >= kRescanMs;
    if (!full) {
      std::vector<PidStat> alive;
      PidStat stat;
      for (const PidStat& m : members) {
        if (read_pid(dir_fd, std::to_string(m.pid).c_str(), stat) && stat.start_time == m.start_time) {
          alive.push_back(stat);
        }
      }
      members = std::move(alive);
    }
    pids.clear();
    std::unordered_set<pid_t> listed;
    rewinddir(proc_dir);
    PidStat stat;
    while (dirent* entry = readdir(proc_dir)) {
      if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
      pid_t pid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
      listed.insert(pid);
      if ((full || !listed_pids.contains(pid)) && read_pid(dir_fd, entry->d_name, stat)) pids.push_back(stat);
    }
    listed_pids = std::move(listed);
    if (full) {
      scanned_root = root;
      last_scan_ms = now_ms;
      members.clear();
      for (const PidStat* p : process_tree(pids, root)) members.push_back(*p);
    } else {
      // New pids whose parent is a member (or another new pid that is), in any order of listing.
      std::unordered_set<pid_t> in_tree;
      for (const PidStat& m : members) in_tree.insert(m.pid);
      for (bool grew = true; grew;) {
        grew = false;
        for (const PidStat& p : pids) {
          if (in_tree.contains(p.ppid) && in_tree.insert(p.pid).second) {
            members.push_back(p);
            grew = true;
          }
        }
      }
    }
    std::vector<const PidStat*> tree;
    for (const PidStat& m : members) tree.push_back(&m);
    return tree;
  }

  // Reads the counters; appends the records of one tick when `emit` (not for the baseline).
  void sample(bool emit, std::vector<store::SystemRecord>& records) {
    int64_t now = monotonic_ns();
    double dt = static_cast<double>(now - last_ns) / 1e9;
    last_ns = now;
    if (stat_file.read(buffer)) {
      auto cpus = parse_proc_stat_cpus(buffer);
      if (emit) {
        std::vector<std::pair<double, double>> values;  // (utilization, iowait) per core
        for (const auto& c : cpus) {
          auto prev = std::find_if(last_cpus.begin(), last_cpus.end(),
                                   [&](const CpuTimes& p) { return p.name == c.name; });
          double util = 0, wait = 0;
          if (prev != last_cpus.end() && c.total > prev->total) {
            double total = static_cast<double>(c.total - prev->total);
            util = 100.0 * static_cast<double>(c.busy >= prev->busy ? c.busy - prev->busy : 0) / total;
            wait = 100.0 * static_cast<double>(c.iowait >= prev->iowait ? c.iowait - prev->iowait : 0) / total;
          }
          values.emplace_back(util, wait);
        }
        for (size_t i = 0; i < cpus.size(); ++i) records.push_back({"cpu", cpus[i].name, "CPUUtilization", values[i].first});
        for (size_t i = 0; i < cpus.size(); ++i) {
          records.push_back({"cpu", cpus[i].name, "I/OWaitPercentage", values[i].second});
        }
      }
      last_cpus = std::move(cpus);
    }
    if (emit && nvml) {
      for (int i = 0; i < nvml->device_count(); ++i) {
        if (auto g = nvml->sample(i)) {
          std::string name = fmt::format("gpu{}", i);
          records.push_back({"gpu", name, "GPUUtilization", g->utilization});
          records.push_back({"gpu", name, "GPUMemoryUtilization", g->memory_used_percent});
        }
      }
    }
    if (emit && meminfo_file.read(buffer)) {
      if (auto used = parse_memory_used_percent(buffer)) records.push_back({"memory", "MemoryUsedPercent", "", *used});
    }
    if (diskstats_file.read(buffer)) {
      DiskTotals disk = parse_diskstats(buffer, disks);
      if (emit && dt > 0) {
        auto rate = [&](uint64_t now_v, uint64_t last_v) {
          return now_v >= last_v ? static_cast<double>(now_v - last_v) / dt : 0.0;
        };
        records.push_back({"i/o", "IOPS", "", rate(disk.ios, last_disk.ios)});
        records.push_back({"i/o", "ReadThroughputInBytesPerSecond", "", rate(disk.read_bytes, last_disk.read_bytes)});
        records.push_back({"i/o", "WriteThroughputInBytesPerSecond", "", rate(disk.write_bytes, last_disk.write_bytes)});
      }
      last_disk = disk;
    }
    if (netdev_file.read(buffer)) {
      NetTotals net = parse_net_dev(buffer);
      if (emit && dt > 0) {
        auto rate = [&](uint64_t now_v, uint64_t last_v) {
          return now_v >= last_v ? static_cast<double>(now_v - last_v) / dt : 0.0;
        };
        records.push_back({"network", "ReceiveBytesPerSecond", "Algorithm", rate(net.rx_bytes, last_net.rx_bytes)});
        records.push_back({"network", "TransmitBytesPerSecond", "Algorithm", rate(net.tx_bytes, last_net.tx_bytes)});
      }
      last_net = net;
    }
    pid_t root = root_pid.load();
    if (root > 0) {
      auto tree = read_tree(root);
      uint64_t used = tree_cpu.update(tree);
      if (emit && dt > 0 && !tree.empty()) {
        int64_t rss = 0;
        for (const PidStat* p : tree) rss += p->rss_pages;
        double cpu = 100.0 * static_cast<double>(used) / static_cast<double>(clock_ticks) / dt;
        records.push_back({"process", "CPUUtilization", "ProcessTree", cpu});
        records.push_back({"process", "ResidentMemoryBytes", "ProcessTree", static_cast<double>(rss) * page_size});
        records.push_back({"process", "ProcessCount", "ProcessTree", static_cast<double>(tree.size())});
      }
    }
  }

  void run() {
    int64_t cpu_start = thread_cpu_ns();
    const auto interval = std::chrono::milliseconds(options.interval_ms);
    auto next = std::chrono::steady_clock::now() + interval;
    std::vector<store::SystemRecord> records;
    while (true) {
      {
        std::unique_lock lock(mutex);
        if (wake.wait_until(lock, next, [&] { return stopping; })) break;
      }
      records.clear();
      int64_t timestamp = options.epoch_us ? options.epoch_us() : realtime_us();
      sample(true, records);
      if (!error) {
        if (auto status = writer.write_tick(timestamp, records); !status.ok()) {
          spdlog::error("system monitor: {}; no more system metrics will be written", status.error().message);
          std::lock_guard lock(mutex);
          error = status.error();
        } else {
          ticks.fetch_add(1);
        }
      }
      // Fixed-rate schedule; after a long stall, skip the missed ticks instead of bursting.
      next += interval;
      auto now = std::chrono::steady_clock::now();
      if (next < now) next = now + interval - (now - next) % interval;
      cpu_ns.store(thread_cpu_ns() - cpu_start);
    }
    cpu_ns.store(thread_cpu_ns() - cpu_start);
  }
};

Result<std::unique_ptr<SystemMonitor>> SystemMonitor::create(MonitorOptions options) {
  SPROF_TRY_STATUS(validate_interval(options.interval_ms));
  static const std::regex node_pattern(R"(algo-\d+)");
  if (!std::regex_match(options.node_id, node_pattern)) {
    return make_error(ErrorKind::usage, "system metrics node id '{}' must be algo-<n> (smdebug reads no other)",
                      options.node_id);
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->root_pid = impl->options.root_pid;
  impl->open_sources();
  if (!impl->stat_file.ok()) {
    return make_error(ErrorKind::runtime, "system monitor: cannot open {}: {}",
                      (impl->options.proc_root / "stat").string(), std::strerror(errno));
  }
  if (impl->options.gpu) {
    std::string why;
    if (auto nvml = Nvml::open(why, impl->options.nvml_library.c_str())) impl->nvml.emplace(std::move(*nvml));
    if (!impl->nvml) spdlog::info("no GPU metrics: {}", why);
  }
  return std::unique_ptr<SystemMonitor>(new SystemMonitor(std::move(impl)));
}

SystemMonitor::SystemMonitor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SystemMonitor::~SystemMonitor() {
  if (auto status = stop(); !status.ok()) spdlog::debug("system monitor: {}", status.error().message);
}

Status SystemMonitor::start() {
  if (impl_->running) return make_error(ErrorKind::runtime, "system monitor already started");
  std::vector<store::SystemRecord> unused;
  impl_->sample(false, unused);  // baseline for the first tick's rates
  impl_->stopping = false;
  impl_->running = true;
  impl_->started_ns = monotonic_ns();
  impl_->thread = std::thread([this] { impl_->run(); });
  return {};
}

Status SystemMonitor::stop() {
  if (impl_->running) {
    {
      std::lock_guard lock(impl_->mutex);
      impl_->stopping = true;
    }
    impl_->wake.notify_all();
    impl_->thread.join();
    impl_->running = false;
    impl_->stopped_ns = monotonic_ns();
  }
  auto closed = impl_->writer.close();
  std::lock_guard lock(impl_->mutex);
  if (impl_->error) return *impl_->error;
  return closed;
}


MonitorStats SystemMonitor::stats() const {
  MonitorStats s;
  s.ticks = impl_->ticks.load();
  s.thread_cpu_ns = impl_->cpu_ns.load();
  s.wall_ns = (impl_->running ? monotonic_ns() : impl_->stopped_ns) - impl_->started_ns;
  s.gpus = impl_->nvml ? impl_->nvml->device_count() : 0;
  return s;
}

}  // namespace sprof::sysmon
