#pragma once
// The target's OS threads as /proc shows them: run state (on-CPU or not) and, across PID
// namespaces, the mapping from the TIDs the target sees to the TIDs sprof sees.

#include <sys/types.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace sprof::pyframes {

class ProcTasks {
 public:
  explicit ProcTasks(pid_t pid);
  ~ProcTasks();
  ProcTasks(const ProcTasks&) = delete;
  ProcTasks& operator=(const ProcTasks&) = delete;

  // TIDs of the target's threads (sprof's view), from /proc/PID/task.
  std::vector<pid_t> list() const;

  // True when /proc/PID/task/TID/stat says 'R' (running or runnable). The file stays open
  // between calls so that a sample costs one pread per thread. False if the thread is gone.
  bool on_cpu(pid_t tid);

  // TIDs of the target's threads as the target itself sees them (its PID namespace).
  std::vector<pid_t> target_tids();

  // The TID sprof sees for a TID the target sees (they differ when the target runs in its own
  // PID namespace, e.g. a container). 0 when unknown.
  pid_t host_tid(pid_t target_tid);

  // Close stat files of threads not in `alive` (call when the thread set changes).
  void retain(const std::vector<pid_t>& alive);

 private:
  void refresh_namespace_map();

  pid_t pid_;
  bool same_namespace_ = true;
  std::unordered_map<pid_t, int> stat_fds_;
  std::unordered_map<pid_t, pid_t> ns_to_host_;
};

// The state letter of a /proc/.../stat line (the first field after the last ')'), or 0.
char stat_state(std::string_view stat_line);

}  // namespace sprof::pyframes
