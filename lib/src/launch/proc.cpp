#include "launch/proc.hpp"

#include "sprof/profile.hpp"
#include "common/json_text.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace sprof::launch {
namespace {

std::string read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The fields after "comm" in /proc/PID/stat ("S 1234 ..."), or empty.
std::string stat_tail(pid_t pid) {
  std::string stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return {};
  return stat.substr(close + 2);
}

}  // namespace

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::istringstream children(read_small_file(task_dir + "/" + e->d_name + "/children"));
    pid_t child = 0;
    while (children >> child) out.push_back(child);
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool is_running(pid_t pid) {
  std::string tail = stat_tail(pid);
  return !tail.empty() && tail[0] != 'Z' && tail[0] != 'X';
}

std::optional<pid_t> parent_of(pid_t pid) {
  std::istringstream in(stat_tail(pid));
  std::string state;
  pid_t ppid = 0;
  if (in >> state >> ppid) return ppid;
  return std::nullopt;
}

std::string exe_of(pid_t pid) {
  char buf[4096];
  std::string link = "/proc/" + std::to_string(pid) + "/exe";
  ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, size_t(n));
}

std::string image_identity(pid_t pid) {
  std::istringstream in(stat_tail(pid));
  // Fields after comm, counting from 3 (state): 26 startcode, 27 endcode, 28 startstack,
  // 45 start_data, 46 end_data, 47 start_brk.
  std::string field, identity = exe_of(pid);
  for (int number = 3; number <= 47 && in >> field; ++number) {
    if ((number >= 26 && number <= 28) || number >= 45) {
      identity += ' ';
      identity += field;
    }
  }
  return identity;
}

std::vector<std::string> cmdline_of(pid_t pid) {
  std::string raw = read_small_file("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> out;
  size_t start = 0;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    out.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::optional<std::string> environment_variable(pid_t pid, const std::string& name) {
  std::string raw = read_small_file("/proc/" + std::to_string(pid) + "/environ");
  std::string prefix = name + "=";
  size_t start = 0;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    if (raw.compare(start, prefix.size(), prefix) == 0) return raw.substr(start + prefix.size(), end - start - prefix.size());
    start = end + 1;
  }
  return std::nullopt;
}

std::string node_host() {
  std::string host;
  std::string text = read_small_file("/opt/ml/input/config/resourceconfig.json");
  auto config = store::json_depth_within(text) ? nlohmann::json::parse(text, nullptr, false) : nlohmann::json();
  if (config.is_object() && config.contains("current_host") && config["current_host"].is_string()) {
    host = config["current_host"].get<std::string>();
    // It becomes part of node ids, and so of directory and file names.
    if (!store::check_path_component(host, "current_host").ok()) host.clear();
  }
  // SageMaker's training toolkit also puts the host in SM_CURRENT_HOST.
  if (const char* sm = std::getenv("SM_CURRENT_HOST"); host.empty() && sm != nullptr && *sm != '\0') {
    host = sm;
    if (!store::check_path_component(host, "SM_CURRENT_HOST").ok()) host.clear();
  }
  if (host.empty()) {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0) host = name;
  }
  if (host.empty()) host = "localhost";
  std::replace(host.begin(), host.end(), '_', '-');
  return host;
}

std::string system_node_id(const std::string& host) {
  static const std::regex algo(R"(algo-[1-9][0-9]*)");
  if (std::regex_match(host, algo)) return host;
  // Outside SageMaker the node's rank (torchrun's GROUP_RANK, or NODE_RANK) numbers it.
  for (const char* name : {"GROUP_RANK", "NODE_RANK"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    long rank = std::strtol(v, &end, 10);
    if (end != nullptr && *end == '\0' && rank >= 0 && rank < 100000) return fmt::format("algo-{}", rank + 1);
  }
  return "algo-1";
}

}  // namespace sprof::launch
