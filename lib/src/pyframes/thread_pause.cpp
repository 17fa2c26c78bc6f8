#include "pyframes/thread_pause.hpp"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "pyframes/proc_maps.hpp"

namespace sprof::pyframes {
namespace {

constexpr long kStopTimeoutNs = 50'000'000;  // a thread in uninterruptible sleep may not stop at once

long elapsed_ns(const timespec& since) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - since.tv_sec) * 1'000'000'000L + (now.tv_nsec - since.tv_nsec);
}

}  // namespace

ThreadPauser::~ThreadPauser() {
  resume();
  settle_pending(true);
}

// Waits for `tid` to report a ptrace stop. Uses waitid with WNOWAIT first so that an exit of
// the target's main thread is never reaped here: when sprof launched the target, that exit
// status belongs to the code that waits for the child.
ThreadPauser::WaitResult ThreadPauser::wait_stop(pid_t tid, int& signal, bool block) {
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  int spins = 0;
  for (;;) {
    siginfo_t info{};
    int rc = waitid(P_PID, static_cast<id_t>(tid), &info, WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL);
    if (rc != 0) {
      if (errno == EINTR) continue;
      return WaitResult::gone;  // ECHILD: not (or no longer) our tracee
    }
    if (info.si_pid == tid) {
      if (info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
        if (tid != pid_) {
          int status = 0;
          waitpid(tid, &status, __WALL | WNOHANG);  // a thread's exit: release it
        }
        return WaitResult::gone;
      }
      int status = 0;
      if (waitpid(tid, &status, __WALL | WNOHANG) != tid) continue;
      if (WIFSTOPPED(status)) {
        int sig = WSTOPSIG(status);
        int event = status >> 16;
        // PTRACE_EVENT_STOP is our interrupt (or a group stop); anything else is a signal that
        // arrived first and must be delivered when we let go.
        signal = (event == PTRACE_EVENT_STOP || event != 0 || sig == SIGTRAP) ? 0 : sig;
        if (event == PTRACE_EVENT_STOP && (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)) {
          signal = 0;  // group stop: detaching leaves it stopped, as it should be
        }
        return WaitResult::stopped;
      }
      return WaitResult::gone;
    }
    if (!block && elapsed_ns(start) > kStopTimeoutNs) return WaitResult::timeout;
    if (++spins > 64) {
      timespec pause{0, 20'000};
      nanosleep(&pause, nullptr);
    }
  }
}

void ThreadPauser::settle_pending(bool block) {
  for (size_t i = 0; i < pending_.size();) {
    int signal = 0;
    WaitResult r = wait_stop(pending_[i], signal, block);
    if (r == WaitResult::timeout) {
      ++i;
      continue;
    }
    if (r == WaitResult::stopped) ptrace(PTRACE_DETACH, pending_[i], nullptr, reinterpret_cast<void*>(static_cast<long>(signal)));
    pending_.erase(pending_.begin() + static_cast<long>(i));
  }
}

Status ThreadPauser::pause(std::span<const pid_t> tids) {
  settle_pending(false);
  for (pid_t tid : tids) {
    if (tid <= 0) continue;
    bool already = false;
    for (pid_t p : pending_) already = already || p == tid;
    if (already) continue;
    if (ptrace(PTRACE_SEIZE, tid, nullptr, reinterpret_cast<void*>(PTRACE_O_TRACEEXIT)) != 0) {
      int err = errno;
      if (err == ESRCH) continue;  // exited meanwhile
      resume();
      if (err == EPERM) {
        return make_error(ErrorKind::permission, "cannot pause thread {} of process {} (ptrace: {}); {}", tid,
                          pid_, std::strerror(err), permission_remedies(pid_));
      }
      return make_error(ErrorKind::io, "cannot pause thread {} of process {} (ptrace: {})", tid, pid_,
                        std::strerror(err));
    }
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
      ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
      continue;
    }
    int signal = 0;
    switch (wait_stop(tid, signal, false)) {
      case WaitResult::stopped:
        stopped_.push_back({tid, signal});
        break;
      case WaitResult::gone:
        break;
      case WaitResult::timeout:
        pending_.push_back(tid);
        break;
    }
  }
  return {};
}

void ThreadPauser::resume() {
  for (const Stopped& s : stopped_) {
    ptrace(PTRACE_DETACH, s.tid, nullptr, reinterpret_cast<void*>(static_cast<long>(s.signal)));
  }
  stopped_.clear();
}

}  // namespace sprof::pyframes
