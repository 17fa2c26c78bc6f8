#include "pyframes/proc_tasks.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

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
  for (auto& [tid, fd] : stat_fds_) ::close(fd);
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

bool ProcTasks::on_cpu(pid_t tid) {
  if (tid <= 0) return false;
  auto it = stat_fds_.find(tid);
  if (it == stat_fds_.end()) {
    int fd = ::open(fmt::format("/proc/{}/task/{}/stat", pid_, tid).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    it = stat_fds_.emplace(tid, fd).first;
  }
  char buf[512];
  ssize_t n = ::pread(it->second, buf, sizeof(buf), 0);
  if (n <= 0) {
    // The thread is gone (its TID may come back as a new thread: reopen next time).
    ::close(it->second);
    stat_fds_.erase(it);
    return false;
  }
  return stat_state(std::string_view(buf, static_cast<size_t>(n))) == 'R';
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
  for (auto it = stat_fds_.begin(); it != stat_fds_.end();) {
    bool keep = false;
    for (pid_t tid : alive) keep = keep || tid == it->first;
    if (keep) {
      ++it;
    } else {
      ::close(it->second);
      it = stat_fds_.erase(it);
    }
  }
}

}  // namespace sprof::pyframes
