#include "pyframes/thread_pause.hpp"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "pyframes/proc_maps.hpp"
#include "sprof/clock.hpp"

namespace sprof::pyframes {
namespace {

constexpr long kStopTimeoutNs = 50'000'000;  // a thread in uninterruptible sleep may not stop at once
// How often a final settle looks whether a thread it waits for is stopped already: a stop report
// another wait consumed never comes again, and the thread must not be left stopped.
constexpr long kSettleTimeoutNs = 2'000'000'000;

// Why PTRACE_SEIZE said EPERM for a thread: it is exiting (a zombie thread cannot be traced),
// another tracer holds it, or we are not allowed at all.
struct TraceBlock {
  bool exiting = false;
  pid_t tracer = 0;
};

TraceBlock trace_block(pid_t pid, pid_t tid) {
  TraceBlock block;
  std::ifstream in(fmt::format("/proc/{}/task/{}/status", pid, tid));
  if (!in) {
    block.exiting = true;
    return block;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("State:", 0) == 0) {
      block.exiting = line.find('Z') != std::string::npos || line.find('X') != std::string::npos;
    } else if (line.rfind("TracerPid:", 0) == 0) {
      block.tracer = static_cast<pid_t>(std::atoi(line.c_str() + 10));
    }
  }
  return block;
}

// The state letter of /proc/<pid>/task/<tid>/stat ('t': in a ptrace stop), 0 when unreadable.
char task_state(pid_t pid, pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/stat", static_cast<int>(pid), static_cast<int>(tid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char buffer[512];
  size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
  std::fclose(f);
  buffer[n] = '\0';
  const char* close = std::strrchr(buffer, ')');
  return close != nullptr && close[1] == ' ' ? close[2] : 0;
}

long elapsed_ns(int64_t since_ns) { return static_cast<long>(monotonic_ns() - since_ns); }

}  // namespace

ThreadPauser::~ThreadPauser() {
  resume();
  settle_pending(true);
}

// Waits for `tid` to report a ptrace stop. Uses waitid with WNOWAIT first so that an exit of
// the target's main thread is never reaped here: when sprof launched the target, that exit
// status belongs to the code that waits for the child.
ThreadPauser::WaitResult ThreadPauser::wait_stop(pid_t tid, int& signal, bool block) {
  const int64_t start = monotonic_ns();
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
        // A group stop (event stop with a stop signal) stays a stop after detaching, as it should.
        signal = event == 0 ? sig : 0;
        return WaitResult::stopped;
      }
      return WaitResult::gone;
    }
    if (elapsed_ns(start) > (block ? kSettleTimeoutNs : kStopTimeoutNs)) return WaitResult::timeout;
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
    if (r == WaitResult::timeout && block) {
      // A thread in a ptrace stop whose report another wait took: detach it now, or it stays
      // stopped for ever. One still running (a long uninterruptible sleep) will report its stop:
      // keep waiting for it, as before.
      if (task_state(pid_, pending_[i]) == 't') {
        ptrace(PTRACE_DETACH, pending_[i], nullptr, nullptr);
        pending_.erase(pending_.begin() + static_cast<long>(i));
      }
      continue;
    }
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
  // Interrupt every thread first and only then wait, so the threads stop in parallel and the
  // first one paused waits for the last one the shortest time.
  std::vector<pid_t> interrupted;
  auto fail = [&](Error error) -> Status {
    pending_.insert(pending_.end(), interrupted.begin(), interrupted.end());
    settle_pending(false);
    resume();
    return error;
  };
  for (pid_t tid : tids) {
    if (tid <= 0) continue;
    // Two thread states can name one TID (a finished thread's state lingers while its TID or
    // pthread is reused); a second seize of a thread we trace would fail.
    bool already = is_paused(tid);
    for (pid_t p : pending_) already = already || p == tid;
    for (pid_t p : interrupted) already = already || p == tid;
    if (already) continue;
    if (ptrace(PTRACE_SEIZE, tid, nullptr, reinterpret_cast<void*>(PTRACE_O_TRACEEXIT)) != 0) {
      int err = errno;
      if (err == ESRCH) continue;  // exited meanwhile
      TraceBlock block = err == EPERM ? trace_block(pid_, tid) : TraceBlock{};
      if (block.exiting) continue;
      if (block.tracer != 0 && block.tracer != getpid()) {
        return fail(make_error(ErrorKind::permission,
                               "cannot pause thread {} of process {}: it is already traced by process {} (a debugger?)",
                               tid, pid_, block.tracer));
      }
      if (err == EPERM) {
        return fail(make_error(ErrorKind::permission, "cannot pause thread {} of process {} (ptrace: {}); {}", tid,
                               pid_, std::strerror(err), permission_remedies(pid_)));
      }
      return fail(make_error(ErrorKind::io, "cannot pause thread {} of process {} (ptrace: {})", tid, pid_,
                             std::strerror(err)));
    }
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
      ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
      continue;
    }
    interrupted.push_back(tid);
  }
  for (pid_t tid : interrupted) {
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
