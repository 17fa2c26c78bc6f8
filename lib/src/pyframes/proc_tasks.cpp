#include "pyframes/proc_tasks.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

namespace sprof::pyframes {
namespace {

// The NSpid line of a status file: the TID in each PID namespace, outermost (ours) first.
std::vector<pid_t> read_nspid(const std::string& status_path) {
  std::ifstream in(status_path);
  std::string line;
  std::vector<pid_t> ids;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    pid_t id = 0;
    while (fields >> id) ids.push_back(id);
    break;
  }
  return ids;
}

}  // namespace

char stat_state(std::string_view stat_line) {
  size_t paren = stat_line.rfind(')');
  if (paren == std::string_view::npos || paren + 2 >= stat_line.size()) return 0;
  return stat_line[paren + 2];
}

ProcTasks::ProcTasks(pid_t pid) : pid_(pid) {
  std::vector<pid_t> ids = read_nspid(fmt::format("/proc/{}/status", pid));
  same_namespace_ = ids.size() <= 1;
}

ProcTasks::~ProcTasks() {
  for (auto& [tid, state] : states_) close_state(state);
}

void ProcTasks::close_state(RunState& state) {
  if (state.stat_fd >= 0) ::close(state.stat_fd);
  if (state.schedstat_fd >= 0) ::close(state.schedstat_fd);
  state.stat_fd = state.schedstat_fd = -1;
}

std::vector<pid_t> ProcTasks::list() const {
  std::vector<pid_t> tids;
  std::string path = fmt::format("/proc/{}/task", pid_);
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return tids;
  while (dirent* entry = readdir(dir)) {
    std::string_view name = entry->d_name;
    pid_t tid = 0;
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), tid);
    if (ec == std::errc() && ptr == name.data() + name.size() && tid > 0) tids.push_back(tid);
  }
  closedir(dir);
  return tids;
}

bool ProcTasks::on_cpu(pid_t tid, bool* asleep_since_last) {
  if (asleep_since_last != nullptr) *asleep_since_last = false;
  if (tid <= 0) return false;
  auto it = states_.find(tid);
  if (it == states_.end()) {
    RunState state;
    state.stat_fd = ::open(fmt::format("/proc/{}/task/{}/stat", pid_, tid).c_str(), O_RDONLY | O_CLOEXEC);
    if (state.stat_fd < 0) return false;
    state.schedstat_fd = ::open(fmt::format("/proc/{}/task/{}/schedstat", pid_, tid).c_str(), O_RDONLY | O_CLOEXEC);
    it = states_.emplace(tid, state).first;
  }
  RunState& state = it->second;
  auto gone = [&] {
    // The thread is gone (its TID may come back as a new thread: reopen next time).
    close_state(state);
    states_.erase(it);
    return false;
  };
  if (state.schedstat_fd >= 0) {
    char now[sizeof(state.schedstat)];
    ++proc_reads_;
    ssize_t n = ::pread(state.schedstat_fd, now, sizeof(now), 0);
    if (n <= 0) return gone();
    const auto size = static_cast<size_t>(n);
    if (state.known && size == state.schedstat_size && std::memcmp(now, state.schedstat, size) == 0) {
      // A running thread's counters may not move between scheduler ticks, so only a sleeper's
      // unchanged counters prove it did nothing.
      if (asleep_since_last != nullptr) *asleep_since_last = !state.on_cpu;
      return state.on_cpu;
    }
    std::memcpy(state.schedstat, now, size);
    state.schedstat_size = size;
  }
  char buf[512];
  ++proc_reads_;
  ssize_t n = ::pread(state.stat_fd, buf, sizeof(buf), 0);
  if (n <= 0) return gone();
  state.on_cpu = stat_state(std::string_view(buf, static_cast<size_t>(n))) == 'R';
  state.known = true;
  return state.on_cpu;
}

void ProcTasks::refresh_namespace_map() {
  ns_to_host_.clear();
  for (pid_t tid : list()) {
    std::vector<pid_t> ids = read_nspid(fmt::format("/proc/{}/task/{}/status", pid_, tid));
    if (!ids.empty()) ns_to_host_[ids.back()] = ids.front();
  }
}

std::vector<pid_t> ProcTasks::target_tids() {
  if (same_namespace_) return list();
  refresh_namespace_map();
  std::vector<pid_t> tids;
  for (const auto& [target, host] : ns_to_host_) tids.push_back(target);
  return tids;
}

pid_t ProcTasks::host_tid(pid_t target_tid) {
  if (same_namespace_ || target_tid <= 0) return target_tid;
  auto it = ns_to_host_.find(target_tid);
  if (it == ns_to_host_.end()) {
    refresh_namespace_map();
    it = ns_to_host_.find(target_tid);
    if (it == ns_to_host_.end()) return 0;
  }
  return it->second;
}

void ProcTasks::retain(const std::vector<pid_t>& alive) {
  if (states_.size() <= alive.size()) return;  // nothing can be stale
  std::unordered_set<pid_t> keep(alive.begin(), alive.end());
  for (auto it = states_.begin(); it != states_.end();) {
    if (keep.count(it->first) != 0) {
      ++it;
    } else {
      close_state(it->second);
      it = states_.erase(it);
    }
  }
}

}  // namespace sprof::pyframes
