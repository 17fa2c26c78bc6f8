#pragma once
// Pausing chosen threads of the target with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT) so that a
// stack can be read while it cannot change, and letting them go again. Only the threads named
// are touched; threads without Python state (CUDA, NCCL, OpenMP workers) keep running.
//
// ptrace ties a tracee to the tracing *thread*: pause(), resume() and the destructor must all be
// called from the same thread. The target is never left stopped: resume() detaches every thread
// that stopped, re-injecting any signal that arrived meanwhile; a thread that has not stopped
// within the timeout is detached as soon as it does (next pause() call or the destructor), and
// the kernel detaches everything if sprof dies.

#include <sys/types.h>

#include <span>
#include <string>
#include <vector>

#include "sprof/result.hpp"

namespace sprof::pyframes {

class ThreadPauser {
 public:
  explicit ThreadPauser(pid_t pid) : pid_(pid) {}
  ~ThreadPauser();
  ThreadPauser(const ThreadPauser&) = delete;
  ThreadPauser& operator=(const ThreadPauser&) = delete;

  // Stops each thread in `tids`. Threads that have exited are skipped. Fails (permission) if
  // the OS refuses to trace the process; other threads paused so far are resumed first.
  Status pause(std::span<const pid_t> tids);
  // Lets every paused thread run again.
  void resume();

  size_t paused() const { return stopped_.size(); }
  bool is_paused(pid_t tid) const {
    for (const Stopped& s : stopped_) {
      if (s.tid == tid) return true;
    }
    return false;
  }

 private:
  struct Stopped {
    pid_t tid;
    int signal;  // signal to re-inject on detach (0: none)
  };
  enum class WaitResult { stopped, gone, timeout };
  WaitResult wait_stop(pid_t tid, int& signal, bool block);
  void settle_pending(bool block);

  pid_t pid_;
  std::vector<Stopped> stopped_;
  std::vector<pid_t> pending_;  // seized and interrupted, but not yet seen stopped
};

}  // namespace sprof::pyframes
