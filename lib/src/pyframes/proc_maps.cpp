#include "pyframes/proc_maps.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sprof::pyframes {
namespace {

bool parse_hex(std::string_view s, uint64_t& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::string_view next_field(std::string_view& line) {
  size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  size_t end = line.find(' ');
  std::string_view field = line.substr(0, end);
  line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  return field;
}

bool parse_line(std::string_view line, MemoryMap& map) {
  std::string_view range = next_field(line);
  std::string_view perms = next_field(line);
  std::string_view offset = next_field(line);
  std::string_view dev = next_field(line);
  std::string_view inode = next_field(line);
  if (inode.empty() || perms.size() < 3) return false;
  (void)dev;
  size_t dash = range.find('-');
  if (dash == std::string_view::npos) return false;
  if (!parse_hex(range.substr(0, dash), map.start) || !parse_hex(range.substr(dash + 1), map.end) ||
      !parse_hex(offset, map.offset)) {
    return false;
  }
  map.readable = perms[0] == 'r';
  map.writable = perms[1] == 'w';
  map.executable = perms[2] == 'x';
  size_t path_start = line.find_first_not_of(' ');
  map.path = path_start == std::string_view::npos ? std::string() : std::string(line.substr(path_start));
  return true;
}

}  // namespace

std::vector<MemoryMap> parse_maps(std::string_view text) {
  std::vector<MemoryMap> maps;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    MemoryMap map;
    if (parse_line(line, map)) maps.push_back(std::move(map));
  }
  return maps;
}

namespace {

// Effective capabilities of sprof itself (CapEff in /proc/self/status).
bool have_sys_ptrace() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      uint64_t caps = std::strtoull(line.c_str() + 7, nullptr, 16);
      return (caps >> 19 & 1) != 0;  // CAP_SYS_PTRACE
    }
  }
  return false;
}

int yama_scope() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  int scope = -1;
  if (!(in >> scope)) return -1;
  return scope;
}

// Whether `pid` descends from this process (sprof launched it): then "start it under sprof
// record" is no remedy.
bool launched_by_me(pid_t pid) {
  const pid_t me = ::getpid();
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    size_t close = text.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream fields(text.substr(close + 1));
    std::string state;
    pid_t parent = 0;
    if (!(fields >> state >> parent)) return false;
    if (parent == me) return true;
    pid = parent;
  }
  return false;
}

}  // namespace

std::string permission_remedies(pid_t pid) {
  PermissionFacts facts;
  facts.pid = pid;
  facts.my_uid = geteuid();
  facts.ptrace_cap = have_sys_ptrace();
  facts.yama_scope = yama_scope();
  struct stat st {};
  if (::stat(fmt::format("/proc/{}", pid).c_str(), &st) == 0) facts.target_uid = st.st_uid;
  facts.launched_by_me = launched_by_me(pid);
  return permission_remedies(facts);
}

std::string permission_remedies(const PermissionFacts& f) {
  // Say which of the usual causes applies before listing the remedies.
  std::string cause;
  const bool other_user = f.target_uid && *f.target_uid != f.my_uid && !f.ptrace_cap;
  if (other_user) {
    cause = fmt::format("process {} runs as uid {} and sprof as uid {}", f.pid, *f.target_uid, f.my_uid);
  } else if (f.yama_scope == 3) {
    cause = "Yama ptrace_scope is 3: ptrace is disabled for everyone until reboot";
  } else if (f.yama_scope >= 1 && !f.ptrace_cap && !f.launched_by_me) {
    cause = fmt::format("Yama ptrace_scope is {}: only a parent (or a process the target allowed) may read it",
                        f.yama_scope);
  } else if (f.my_uid == 0 && !f.ptrace_cap) {
    cause = "sprof runs as root but without the CAP_SYS_PTRACE capability (a container?)";
  } else {
    cause = "the kernel refused ptrace access (the target may have made itself undumpable)";
  }
  // Only the remedies that apply here: no Yama advice where the kernel has no Yama, no "start it
  // under sprof record" when sprof started it, no "run as root" for root.
  std::vector<std::string> remedies;
  if (f.my_uid != 0) remedies.push_back("run sprof as the same user as the target, or as root (sudo)");
  if (f.yama_scope == 3) {
    remedies.push_back("Yama's ptrace_scope 3 lasts until reboot: reboot with a lower "
                       "kernel.yama.ptrace_scope");
  } else if (f.yama_scope >= 1 && !f.ptrace_cap) {
    if (!f.launched_by_me) remedies.push_back("start the target under `sprof record -- CMD` (a parent may read it)");
    remedies.push_back(fmt::format("set /proc/sys/kernel/yama/ptrace_scope to 0 (it is {})", f.yama_scope));
  }
  if (!f.ptrace_cap) {
    remedies.push_back("in a container, add the CAP_SYS_PTRACE capability (docker run --cap-add SYS_PTRACE, or "
                       "securityContext.capabilities.add: [SYS_PTRACE] in Kubernetes)");
  }
  std::string text = fmt::format("cause: {}.", cause);
  if (!remedies.empty()) text += fmt::format(" Remedies: {}", fmt::join(remedies, "; "));
  return text;
}

Result<std::vector<MemoryMap>> read_maps(pid_t pid) {
  std::string path = fmt::format("/proc/{}/maps", pid);
  std::ifstream in(path);
  if (!in) {
    int err = errno;
    if (err == EACCES || err == EPERM) {
      return make_error(ErrorKind::permission, "cannot read {}: {}; {}", path, std::strerror(err),
                        permission_remedies(pid));
    }
    return make_error(ErrorKind::io, "no process with pid {} ({}: {})", pid, path, std::strerror(err));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return make_error(ErrorKind::io, "cannot read {}", path);
  }
  return parse_maps(text.str());
}

}  // namespace sprof::pyframes
