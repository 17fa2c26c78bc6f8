#include "pyframes/proc_maps.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

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

std::string permission_remedies(pid_t pid) {
  return fmt::format(
      "the OS refused to let sprof read process {}. Reading another process needs ptrace "
      "access: run sprof as the same user as the target (or as root); with Yama "
      "(/proc/sys/kernel/yama/ptrace_scope = 1) only a parent may read its children, so either "
      "start the target under `sprof record -- CMD`, run sprof with sudo, or set ptrace_scope to "
      "0; in a container add the CAP_SYS_PTRACE capability (docker run --cap-add SYS_PTRACE, or "
      "securityContext.capabilities.add: [SYS_PTRACE] in Kubernetes)",
      pid);
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
