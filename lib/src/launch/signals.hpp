#pragma once
// What record does with SIGINT, SIGTERM, SIGHUP and SIGQUIT, from the moment the guard exists
// until it is destroyed:
//  - before the command exists (launch mode, until start_forwarding): remembered; the launch is
//    abandoned and sprof exits 128+N;
//  - while the command runs: forwarded to it once, unless the same signal went to the whole
//    process group and so reached the command already (a terminal's ^C, kill -INT -PGID,
//    timeout(1)); a witness process in the group tells which;
//  - afterwards, and in attach mode: a stop request (stop sampling, or stop writing statistics
//    early and leave the profile for `stats-dirs` to finish).
// Signals the parent left ignored (nohup's SIGHUP, a background job's SIGINT) stay ignored by
// sprof and by the command. The four are blocked in every thread and taken by one thread of the
// guard's (sigwaitinfo), so nothing is lost between fork and exec or during a hook. SIGCHLD
// gets an empty handler: it ends the sampling loop's sleep (an exit, a ptrace stop) and keeps an
// inherited SIG_IGN from reaping the command.

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace sprof::launch {

// The dispositions and mask sprof had before the guard: the command gets them back before exec.
struct InheritedSignals {
  static constexpr int kCount = 6;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE};
  struct sigaction actions[kCount] {};
  sigset_t mask{};
  // Async-signal-safe: for the forked child between fork and exec.
  void restore() const;
};

class SignalGuard {
 public:
  // launch: signals are for a command started later (forward_to); otherwise they request a stop.
  explicit SignalGuard(bool launch);
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  const InheritedSignals& inherited() const { return inherited_; }

  // Launch mode, just before the command is released: from now on signals go to pid. Returns
  // the first signal that arrived before (then nothing is forwarded and the launch should be
  // abandoned), or 0.
  int start_forwarding(pid_t pid);
  // The command exited: later signals are stop requests.
  void stop_forwarding();
  // The last signal that asked sprof to stop, or 0; clears it.
  int take_stop_request();
  // Whether a stop was requested (not cleared): long work after sampling checks it.
  bool stop_requested() const { return stop_seen_.load() != 0; }
  // The signal that requested it (or the one before the command existed), or 0.
  int stop_signal() const { return stop_seen_.load(); }
  // Signals forwarded to the command, and signals it got from its group without sprof.
  int forwarded() const { return forwarded_.load(); }
  int left_to_group() const { return left_to_group_.load(); }

 private:
  void run();
  void handle(const siginfo_t& info);
  bool reached_group(int sig);

  InheritedSignals inherited_;
  sigset_t handled_{};  // the subset of the signals sprof takes (not inherited as ignored)
  std::mutex mutex_;
  enum class Phase { before_command, forwarding, stopping };
  Phase phase_;             // guarded by mutex_
  pid_t target_ = 0;        // guarded by mutex_
  int early_signal_ = 0;    // a signal in Phase::before_command; guarded by mutex_
  std::atomic<int> stop_request_{0};
  std::atomic<int> stop_seen_{0};
  std::atomic<int> forwarded_{0};
  std::atomic<int> left_to_group_{0};
  // The group witness: a child in sprof's process group that blocks every signal, so a group
  // signal stays pending in it (see signals.cpp).
  pid_t witness_ = -1;
  int witness_socket_ = -1;
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

}  // namespace sprof::launch
