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

  // True when /proc/PID/task/TID/stat says 'R' (running or runnable). False if the thread is
  // gone. The kernel formats all of stat's 52 fields (about 4.5 µs a read), so stat is read only
  // when the thread's schedstat (run time, run-queue wait, times scheduled in; about 1.2 µs)
  // changed since the last call: a thread that neither ran nor was scheduled in since cannot
  // have changed state, except from sleeping to runnable-but-not-yet-run, which then reads as
  // still sleeping until it runs. Both files stay open between calls.
  //
  // `asleep_since_last` (optional) is set when the thread was asleep (not 'R') at the last call
  // and has not been scheduled in since (schedstat unchanged): it executed nothing in between,
  // so what it had in memory then it still has.
  bool on_cpu(pid_t tid, bool* asleep_since_last = nullptr);
  // /proc files read so far by on_cpu.
  uint64_t proc_reads() const { return proc_reads_; }

  // TIDs of the target's threads as the target itself sees them (its PID namespace).
  std::vector<pid_t> target_tids();

  // The TID sprof sees for a TID the target sees (they differ when the target runs in its own
  // PID namespace, e.g. a container). 0 when unknown.
  pid_t host_tid(pid_t target_tid);

  // Close stat files of threads not in `alive` (call when the thread set changes).
  void retain(const std::vector<pid_t>& alive);

 private:
  void refresh_namespace_map();

  struct RunState {
    int stat_fd = -1;
    int schedstat_fd = -1;  // -1: not available (stat every time)
    char schedstat[64] = {};  // the last schedstat text read
    size_t schedstat_size = 0;
    bool known = false;
    bool on_cpu = false;
  };
  void close_state(RunState& state);

  pid_t pid_;
  bool same_namespace_ = true;
  uint64_t proc_reads_ = 0;
  std::unordered_map<pid_t, RunState> states_;
  std::unordered_map<pid_t, pid_t> ns_to_host_;
};

// The state letter of a /proc/.../stat line (the first field after the last ')'), or 0.
char stat_state(std::string_view stat_line);

}  // namespace sprof::pyframes
