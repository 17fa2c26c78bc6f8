#include "sysmon/proc_stats.hpp"

#include <charconv>

namespace sprof::sysmon {
namespace {

// Splits on spaces/tabs.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <class T>
T number(std::string_view text) {
  T value{};
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

template <class F>
void for_each_line(std::string_view text, F&& f) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    f(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

}  // namespace

std::vector<CpuTimes> parse_proc_stat_cpus(std::string_view text) {
  std::vector<CpuTimes> cpus;
  for_each_line(text, [&](std::string_view line) {
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') return;
    auto f = fields(line);
    if (f.size() < 5) return;
    uint64_t v[8] = {};
    for (size_t i = 0; i < 8 && i + 1 < f.size(); ++i) v[i] = number<uint64_t>(f[i + 1]);
    CpuTimes t;
    t.name = std::string(f[0]);
    uint64_t idle = v[3], iowait = v[4];
    t.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    t.iowait = iowait;
    t.busy = t.total - idle - iowait;
    cpus.push_back(std::move(t));
  });
  return cpus;
}

std::optional<double> parse_memory_used_percent(std::string_view text) {
  std::optional<uint64_t> total, available;
  for_each_line(text, [&](std::string_view line) {
    auto f = fields(line);
    if (f.size() < 2) return;
    if (f[0] == "MemTotal:") total = number<uint64_t>(f[1]);
    if (f[0] == "MemAvailable:") available = number<uint64_t>(f[1]);
  });
  if (!total || !available || *total == 0) return std::nullopt;
  uint64_t used = *total > *available ? *total - *available : 0;
  return 100.0 * static_cast<double>(used) / static_cast<double>(*total);
}

bool is_counted_disk(std::string_view name) {
  for (std::string_view prefix : {"loop", "ram", "zram", "dm-", "md", "sr", "fd"}) {
    if (name.substr(0, prefix.size()) == prefix) return false;
  }
  return !name.empty();
}

DiskTotals parse_diskstats(std::string_view text, const std::vector<std::string>& devices) {
  DiskTotals totals;
  for_each_line(text, [&](std::string_view line) {
    auto f = fields(line);
    if (f.size() < 10) return;
    bool wanted = false;
    for (const auto& d : devices) wanted = wanted || f[2] == d;
    if (!wanted) return;
    totals.ios += number<uint64_t>(f[3]) + number<uint64_t>(f[7]);
    totals.read_bytes += number<uint64_t>(f[5]) * 512;
    totals.write_bytes += number<uint64_t>(f[9]) * 512;
  });
  return totals;
}

NetTotals parse_net_dev(std::string_view text) {
  NetTotals totals;
  for_each_line(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    auto name = fields(line.substr(0, colon));
    if (name.size() != 1 || name[0] == "lo") return;
    auto f = fields(line.substr(colon + 1));
    if (f.size() < 9) return;
    totals.rx_bytes += number<uint64_t>(f[0]);
    totals.tx_bytes += number<uint64_t>(f[8]);
  });
  return totals;
}

std::optional<PidStat> parse_pid_stat(std::string_view text) {
  // "pid (comm) state ppid ..." where comm may hold spaces and parentheses: split after the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  auto head = fields(text.substr(0, text.find('(')));
  auto f = fields(text.substr(close + 1));
  // After comm: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14) ... starttime(19)
  // vsize(20) rss(21)
  if (head.empty() || f.size() < 22) return std::nullopt;
  PidStat s;
  s.pid = number<pid_t>(head[0]);
  s.ppid = number<pid_t>(f[1]);
  s.cpu_ticks = number<uint64_t>(f[11]) + number<uint64_t>(f[12]);
  s.child_ticks = number<uint64_t>(f[13]) + number<uint64_t>(f[14]);
  s.start_time = number<uint64_t>(f[19]);
  s.rss_pages = number<int64_t>(f[21]);
  return s;
}

std::vector<const PidStat*> process_tree(const std::vector<PidStat>& all, pid_t root) {
  std::unordered_map<pid_t, std::vector<const PidStat*>> children;
  const PidStat* root_stat = nullptr;
  for (const auto& s : all) {
    children[s.ppid].push_back(&s);
    if (s.pid == root) root_stat = &s;
  }
  std::vector<const PidStat*> tree;
  if (root_stat == nullptr) return tree;
  tree.push_back(root_stat);
  for (size_t i = 0; i < tree.size(); ++i) {
    auto it = children.find(tree[i]->pid);
    if (it == children.end()) continue;
    for (const PidStat* child : it->second) {
      if (child->pid != root) tree.push_back(child);
    }
  }
  return tree;
}

uint64_t TreeCpuCounter::update(const std::vector<const PidStat*>& tree) {
  uint64_t gained = 0;
  std::unordered_map<pid_t, Seen> now;
  now.reserve(tree.size());
  for (const PidStat* s : tree) {
    uint64_t total = s->cpu_ticks + s->child_ticks;
    now[s->pid] = Seen{s->start_time, total};
    auto it = last_.find(s->pid);
    if (it != last_.end() && it->second.start_time == s->start_time) {
      if (total > it->second.total) gained += total - it->second.total;
    } else if (!first_) {
      gained += total;
    }
  }
  // Members that are gone were reaped, and their parent's cutime grew by their whole time.
  uint64_t counted_before = 0;
  for (const auto& [pid, seen] : last_) {
    auto it = now.find(pid);
    if (it == now.end() || it->second.start_time != seen.start_time) counted_before += seen.total;
  }
  last_ = std::move(now);
  first_ = false;
  // A member reaped by a process outside the tree (reparented to init) took its time elsewhere.
  return gained > counted_before ? gained - counted_before : 0;
}

}  // namespace sprof::sysmon
