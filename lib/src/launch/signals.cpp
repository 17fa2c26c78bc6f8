#include "launch/signals.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

namespace sprof::launch {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
// The value the guard's destructor queues, with a signal the thread waits for, to end it.
constexpr int kQuitValue = 0x5370726f;

// The witness: blocks every signal, so whatever reaches its process group stays pending in it.
// A byte N on the socket asks it to discard a pending signal N; it answers with the same byte.
// It ends when sprof closes the socket or dies.
[[noreturn]] void witness_main(int socket, pid_t parent) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);
  prctl(PR_SET_NAME, "sprof-witness", 0, 0, 0);
  if (socket != 3) {
    dup2(socket, 3);
    close(socket);
  }
  // Hold nothing of sprof's: no terminal, no pipe a reader waits on, no profile file.
  close(0);
  close(1);
  close(2);
  close_range(4, ~0U, 0);
  unsigned char sig = 0;
  while (read(3, &sig, 1) == 1) {
    // Only the signal sprof saw pending: another that arrived since stays for the next look.
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    timespec zero{};
    while (sigtimedwait(&one, nullptr, &zero) > 0) {
    }
    if (write(3, &sig, 1) != 1) break;
  }
  _exit(0);
}

void on_child_signal(int) {}

// Bit sig-1 of the "ShdPnd:" line of /proc/PID/status: signals pending for the whole process.
bool shared_pending(pid_t pid, int sig) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", int(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[4096];
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  const char* line = std::strstr(text, "\nShdPnd:");
  if (line == nullptr) return false;
  unsigned long long mask = std::strtoull(line + 8, nullptr, 16);
  return sig >= 1 && sig <= 64 && ((mask >> (sig - 1)) & 1ULL) != 0;
}

}  // namespace

void InheritedSignals::restore() const {
  for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &actions[i], nullptr);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
}

SignalGuard::SignalGuard(bool launch) : phase_(launch ? Phase::before_command : Phase::stopping) {
  pthread_sigmask(SIG_SETMASK, nullptr, &inherited_.mask);
  for (int i = 0; i < InheritedSignals::kCount; ++i) sigaction(InheritedSignals::kSignals[i], nullptr, &inherited_.actions[i]);

  // Block first, then look: a signal from now on waits for the thread instead of killing sprof.
  sigset_t blocked;
  sigemptyset(&blocked);
  for (int sig : kForwarded) sigaddset(&blocked, sig);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  sigemptyset(&handled_);
  for (int i = 0; i < 4; ++i) {
    // Ignored by whoever started sprof (nohup, a background job): ignored here and in the command.
    if (inherited_.actions[i].sa_handler != SIG_IGN) sigaddset(&handled_, kForwarded[i]);
  }
  // SIGCHLD gets a handler that does nothing but end the sampling loop's sleep, so an exit or a
  // ptrace stop (--blocking) is seen at once; an ignored SIGCHLD would also reap the command
  // behind sprof's back. The command gets the inherited disposition back.
  struct sigaction wake {};
  wake.sa_handler = on_child_signal;
  wake.sa_flags = SA_RESTART;
  sigemptyset(&wake.sa_mask);
  sigaction(SIGCHLD, &wake, nullptr);

  if (launch) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
      pid_t parent = getpid();
      pid_t pid = fork();
      if (pid == 0) {
        close(sv[0]);
        witness_main(sv[1], parent);
      }
      close(sv[1]);
      if (pid > 0) {
        witness_ = pid;
        witness_socket_ = sv[0];
      } else {
        close(sv[0]);
      }
    }
    if (witness_ < 0) spdlog::debug("no group witness ({}): terminal signals are assumed to reach the command", std::strerror(errno));
  }
  // SIGCHLD is neither blocked nor waited for here: exits and ptrace stops (thousands a second
  // with --blocking) interrupt the sampling loop's sleep, as before the guard took signals on a
  // thread; blocked and queued instead, they measurably skewed --blocking samples on a loaded
  // machine (test_record_accuracy).
  if (!sigisemptyset(&handled_)) thread_ = std::thread([this] { run(); });
}

SignalGuard::~SignalGuard() {
  quit_ = true;
  if (thread_.joinable()) {
    int wake = 0;
    for (int sig : kForwarded) {
      if (sigismember(&handled_, sig) == 1) {
        wake = sig;
        break;
      }
    }
    sigval value{};
    value.sival_int = kQuitValue;
    pthread_sigqueue(thread_.native_handle(), wake, value);
    thread_.join();
  }
  if (witness_socket_ >= 0) close(witness_socket_);
  if (witness_ > 0) {
    int status = 0;
    while (waitpid(witness_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  // Back to what sprof started with; a signal still pending is delivered now, as it would have
  // been without sprof's guard.
  for (int i = 0; i < InheritedSignals::kCount; ++i) {
    if (InheritedSignals::kSignals[i] == SIGCHLD) sigaction(SIGCHLD, &inherited_.actions[i], nullptr);
  }
  pthread_sigmask(SIG_SETMASK, &inherited_.mask, nullptr);
}

void SignalGuard::run() {
  const pid_t self = getpid();
  while (true) {
    siginfo_t info{};
    int sig = sigwaitinfo(&handled_, &info);
    if (sig < 0) continue;  // EINTR
    if (info.si_code == SI_QUEUE && info.si_pid == self && info.si_value.sival_int == kQuitValue && quit_) break;
    // A sender may signal sprof and then the group (timeout(1) does): let such a pair arrive and
    // merge, as it would in a command run without sprof, before deciding where it went.
    timespec settle{0, 2'000'000};
    nanosleep(&settle, nullptr);
    sigset_t same;
    sigemptyset(&same);
    sigaddset(&same, sig);
    timespec zero{};
    siginfo_t again{};
    while (sigtimedwait(&same, &again, &zero) > 0) {
      if (again.si_code > 0) info = again;  // a terminal's copy says where it came from
    }
    handle(info);
  }
}

int SignalGuard::start_forwarding(pid_t pid) {
  std::lock_guard lock(mutex_);
  if (early_signal_ != 0) return early_signal_;
  target_ = pid;
  phase_ = Phase::forwarding;
  return 0;
}

void SignalGuard::stop_forwarding() {
  std::lock_guard lock(mutex_);
  phase_ = Phase::stopping;
  target_ = 0;
}

int SignalGuard::take_stop_request() { return stop_request_.exchange(0); }

bool SignalGuard::reached_group(int sig) {
  if (witness_ <= 0) return false;
  if (!shared_pending(witness_, sig)) return false;
  // Clear the witness for the next signal; a witness that does not answer is gone (killed with
  // its group): from then on sprof cannot tell and forwards.
  auto byte = static_cast<unsigned char>(sig);
  if (write(witness_socket_, &byte, 1) != 1 || read(witness_socket_, &byte, 1) != 1) {
    close(witness_socket_);
    witness_socket_ = -1;
    int status = 0;
    waitpid(witness_, &status, 0);
    witness_ = -1;
  }
  return true;
}

void SignalGuard::handle(const siginfo_t& info) {
  int sig = info.si_signo;
  std::lock_guard lock(mutex_);
  if (phase_ == Phase::before_command) {
    // Before the command exists: the launch is abandoned with the first such status.
    if (early_signal_ == 0) early_signal_ = sig;
    stop_seen_ = sig;
    spdlog::debug("got {} before the command started", strsignal(sig));
    return;
  }
  if (phase_ == Phase::forwarding) {
    // The kernel signals a group's members newest first, so the witness (younger than sprof)
    // has a group signal pending before sprof's copy is even queued.
    bool same_group = getpgid(target_) == getpgrp();
    bool group_signal = witness_ > 0 ? reached_group(sig) : info.si_code > 0;  // > 0: sent by the kernel (a terminal)
    if (same_group && group_signal) {
      ++left_to_group_;
      spdlog::debug("{} went to the whole process group; the command has it already", strsignal(sig));
      return;
    }
    kill(target_, sig);
    ++forwarded_;
    spdlog::debug("forwarded {} to pid {}", strsignal(sig), target_);
    return;
  }
  stop_request_ = sig;
  stop_seen_ = sig;
}

}  // namespace sprof::launch
