#pragma once
// /proc/PID/maps: which files are mapped where in the target.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/result.hpp"

namespace sprof::pyframes {

struct MemoryMap {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;  // file offset of `start`
  bool readable = false;
  bool writable = false;
  bool executable = false;
  std::string path;  // empty for anonymous mappings; "[heap]", "[stack]" for special ones
};

// Parses the text of a maps file; lines that do not parse are skipped.
std::vector<MemoryMap> parse_maps(std::string_view text);

// Reads /proc/PID/maps. Errors: io when the process does not exist, permission when the OS
// refuses (the message names the pid and the remedies).
Result<std::vector<MemoryMap>> read_maps(pid_t pid);

// The permission-denied explanation shared by every reader of another process.
std::string permission_remedies(pid_t pid);

// What the explanation is made from (permission_remedies(pid) reads them from this machine).
struct PermissionFacts {
  pid_t pid = 0;
  std::optional<uid_t> target_uid;  // unknown when /proc/<pid> cannot be read
  uid_t my_uid = 0;
  bool ptrace_cap = false;          // sprof has CAP_SYS_PTRACE
  int yama_scope = -1;              // -1: the kernel has no Yama
  bool launched_by_me = false;      // the target descends from sprof
};
std::string permission_remedies(const PermissionFacts& facts);

}  // namespace sprof::pyframes
