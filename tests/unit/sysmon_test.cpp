// The system monitor's /proc parsers on fabricated file contents, and a short monitor run over a
// fabricated /proc tree whose output the metrics reader accepts.

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <thread>

#include "sprof/sysmon.hpp"
#include "sprof/system_metrics.hpp"
#include "sysmon/proc_stats.hpp"
#include "test_support.hpp"

using namespace sprof::sysmon;

namespace {

const char* kStat =
    "cpu  300 0 100 600 0 0 0 0 0 0\n"
    "cpu0 100 5 50 300 40 3 2 0 7 0\n"
    "cpu1 200 0 50 300 0 0 0 10 0 0\n"
    "intr 1 2 3\n"
    "ctxt 100\n";

}  // namespace

TEST_CASE("per-core CPU times from /proc/stat", "[sysmon]") {
  auto cpus = parse_proc_stat_cpus(kStat);
  REQUIRE(cpus.size() == 2);
  CHECK(cpus[0].name == "cpu0");
  CHECK(cpus[0].total == 100 + 5 + 50 + 300 + 40 + 3 + 2 + 0);  // guest (7) is already in user
  CHECK(cpus[0].iowait == 40);
  CHECK(cpus[0].busy == cpus[0].total - 300 - 40);
  CHECK(cpus[1].busy == 200 + 50 + 10);  // steal counts as busy
}

TEST_CASE("memory, disks and network", "[sysmon]") {
  CHECK(parse_memory_used_percent("MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 250 kB\n") == Approx(75.0));
  CHECK_FALSE(parse_memory_used_percent("MemTotal: 1000 kB\n"));

  const char* diskstats =
      "   7       0 loop0 9 0 9 0 0 0 0 0 0 0 0\n"
      " 253       0 vda 100 1 800 10 50 2 400 20 0 30 30\n"
      " 253       1 vda1 90 1 700 10 40 2 300 20 0 30 30\n";
  auto disk = parse_diskstats(diskstats, {"vda"});
  CHECK(disk.ios == 150);
  CHECK(disk.read_bytes == 800 * 512);
  CHECK(disk.write_bytes == 400 * 512);
  CHECK(is_counted_disk("nvme0n1"));
  CHECK_FALSE(is_counted_disk("loop3"));
  CHECK_FALSE(is_counted_disk("zram0"));
  CHECK_FALSE(is_counted_disk("dm-0"));

  const char* net =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
      "    lo:  5000 1 0 0 0 0 0 0  5000 1 0 0 0 0 0 0\n"
      "  eth0:  1000 1 0 0 0 0 0 0  2000 1 0 0 0 0 0 0\n"
      "  eth1:10 1 0 0 0 0 0 0 20 1 0 0 0 0 0 0\n";
  auto totals = parse_net_dev(net);
  CHECK(totals.rx_bytes == 1010);
  CHECK(totals.tx_bytes == 2020);
}

TEST_CASE("process tree CPU from /proc/<pid>/stat", "[sysmon]") {
  auto stat = [](int pid, int ppid, int utime, int stime, int start, int rss) {
    return fmt::format("{} (py (x) y) S {} 1 1 0 -1 0 0 0 0 0 {} {} 0 0 20 0 1 0 {} 1000 {} 0", pid, ppid, utime,
                       stime, start, rss);
  };
  auto parsed = parse_pid_stat(stat(42, 7, 100, 20, 555, 300));
  REQUIRE(parsed);
  CHECK(parsed->pid == 42);
  CHECK(parsed->ppid == 7);
  CHECK(parsed->cpu_ticks == 120);
  CHECK(parsed->child_ticks == 0);
  auto reaper = parse_pid_stat("7 (sh) S 1 1 1 0 -1 0 0 0 0 0 10 2 300 40 20 0 1 0 9 1000 5 0");
  REQUIRE(reaper);
  CHECK(reaper->cpu_ticks == 12);
  CHECK(reaper->child_ticks == 340);
  CHECK(parsed->start_time == 555);
  CHECK(parsed->rss_pages == 300);

  std::vector<PidStat> all = {*parse_pid_stat(stat(10, 1, 50, 0, 1, 10)), *parse_pid_stat(stat(11, 10, 30, 0, 2, 10)),
                              *parse_pid_stat(stat(12, 11, 20, 0, 3, 10)), *parse_pid_stat(stat(13, 1, 99, 0, 4, 10))};
  auto tree = process_tree(all, 10);
  REQUIRE(tree.size() == 3);  // 10, its child 11 and grandchild 12; not 13

  TreeCpuCounter counter;
  CHECK(counter.update(tree) == 0);  // baseline
  all[0].cpu_ticks += 5;
  all[1].cpu_ticks += 7;
  all.push_back(*parse_pid_stat(stat(14, 10, 4, 0, 9, 10)));  // a new worker: all its 4 ticks count
  all.erase(all.begin() + 2);  // 12 used 3 more ticks, exited and was reaped by 11
  all[1].child_ticks += 20 + 3;
  CHECK(counter.update(process_tree(all, 10)) == 5 + 7 + 4 + 3);

  // A child that started and was reaped between two ticks is never seen; its time is in cutime.
  all[0].child_ticks += 9;
  CHECK(counter.update(process_tree(all, 10)) == 9);
  // A member that left without its parent's cutime growing (reaped outside the tree) takes nothing.
  all.erase(all.begin() + 1);
  CHECK(counter.update(process_tree(all, 10)) == 0);
}

TEST_CASE("intervals are smdebug's", "[sysmon]") {
  for (int ms : {100, 200, 500, 1000, 5000, 60000}) CHECK(validate_interval(ms).ok());
  auto bad = validate_interval(250);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == sprof::ErrorKind::usage);
  CHECK_THAT(bad.error().message, Catch::Contains("--system-interval-ms 250"));
  MonitorOptions options;
  options.node_id = "node1";
  CHECK_FALSE(SystemMonitor::create(options).ok());
}

TEST_CASE("a monitor run writes ticks the reader accepts", "[sysmon]") {
  sprof::test::TempDir dir;
  auto proc = dir.path() / "proc";
  sprof::test::write_file(proc / "stat", kStat);
  sprof::test::write_file(proc / "meminfo", "MemTotal: 1000 kB\nMemAvailable: 600 kB\n");
  sprof::test::write_file(proc / "diskstats", " 253 0 vda 1 0 8 0 1 0 8 0 0 0 0\n");
  sprof::test::write_file(proc / "net/dev", "h\nh\n  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
  std::filesystem::create_directories(dir.path() / "sys/block/vda");

  MonitorOptions options;
  options.profile_dir = dir.path() / "profile";
  options.interval_ms = 100;
  options.gpu = false;
  options.proc_root = proc;
  options.sys_root = dir.path() / "sys";
  int64_t fake_now = 1700000040'000000;
  options.epoch_us = [&fake_now] { return fake_now += 100000; };
  auto monitor = SystemMonitor::create(options);
  REQUIRE(monitor.ok());
  REQUIRE((*monitor)->start().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  REQUIRE((*monitor)->stop().ok());
  auto stats = (*monitor)->stats();
  CHECK(stats.ticks >= 2);
  CHECK(stats.gpus == 0);

  auto metrics = sprof::store::read_system_metrics(options.profile_dir);
  REQUIRE(metrics.ok());
  // Per tick: 2 cores x 2 dimensions, memory, 3 i/o, 2 network (no root pid: no process records).
  REQUIRE(metrics->size() == static_cast<size_t>(stats.ticks) * 10);
  std::map<double, int> per_timestamp;
  for (const auto& m : *metrics) {
    per_timestamp[m.timestamp] += 1;
    CHECK(m.node_id == "algo-1");
  }
  CHECK(per_timestamp.size() == static_cast<size_t>(stats.ticks));
  for (const auto& [ts, n] : per_timestamp) CHECK(n == 10);
  CHECK(metrics->at(4).name == "MemoryUsedPercent");
  CHECK(metrics->at(4).value == Approx(40.0));
  CHECK(metrics->at(0).dimension == "CPUUtilization");
  CHECK(metrics->at(0).value == 0.0);  // the fabricated counters never move
}

TEST_CASE("GPU records come from NVML, loaded at run time", "[sysmon]") {
  sprof::test::TempDir dir;
  MonitorOptions options;
  options.profile_dir = dir.path();
  options.interval_ms = 100;
  options.nvml_library = SPROF_FAKE_NVML;  // two GPUs: 40 % / 25 % memory and 50 % / 50 %
  auto monitor = SystemMonitor::create(options);
  REQUIRE(monitor.ok());
  REQUIRE((*monitor)->start().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  REQUIRE((*monitor)->stop().ok());
  CHECK((*monitor)->stats().gpus == 2);
  auto metrics = sprof::store::read_system_metrics(dir.path());
  REQUIRE(metrics.ok());
  std::map<std::string, double> gpu;
  for (const auto& m : *metrics) {
    if (m.type == "gpu") gpu[m.name + " " + m.dimension] = m.value;
  }
  CHECK(gpu == std::map<std::string, double>{{"gpu0 GPUUtilization", 40.0},
                                             {"gpu0 GPUMemoryUtilization", 25.0},
                                             {"gpu1 GPUUtilization", 50.0},
                                             {"gpu1 GPUMemoryUtilization", 50.0}});

  options.nvml_library = (dir.path() / "missing-libnvidia-ml.so.1").string();
  auto without = SystemMonitor::create(options);
  REQUIRE(without.ok());  // no NVML is not an error: no GPU records
  CHECK((*without)->stats().gpus == 0);
}
