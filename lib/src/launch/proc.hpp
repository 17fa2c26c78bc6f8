#pragma once
// The few /proc facts record needs about processes it follows.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "sprof/launch.hpp"  // cmdline_of

namespace sprof::launch {

// Direct children of `pid` (of any of its threads), from /proc/PID/task/*/children.
std::vector<pid_t> children_of(pid_t pid);
// True while `pid` exists and is not a zombie.
bool is_running(pid_t pid);
std::optional<pid_t> parent_of(pid_t pid);
std::string exe_of(pid_t pid);  // readlink /proc/PID/exe; empty when unreadable
// Changes when the process execs, even into the same binary: the executable plus the code, stack
// and heap start addresses from /proc/PID/stat, which exec lays out anew (randomised by ASLR).
std::string image_identity(pid_t pid);
std::optional<std::string> environment_variable(pid_t pid, const std::string& name);

}  // namespace sprof::launch
