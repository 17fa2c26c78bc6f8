#pragma once
// What record does with SIGINT, SIGTERM, SIGHUP and SIGQUIT. Launch mode: forward them to the
// command (which decides whether to stop) unless the terminal already delivered them to its
// whole process group, which includes the command. Attach mode: stop sampling and write the
// profile. SIGCHLD only wakes the sampling loop so exits are noticed at once.

#include <signal.h>
#include <sys/types.h>

namespace sprof::launch {

class SignalGuard {
 public:
  // Installs the handlers; the destructor restores the previous dispositions.
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  // Launch mode: forward to this pid (0: do not forward; stop requests are recorded instead).
  static void forward_to(pid_t pid);
  // The last signal that asked sprof to stop (attach mode), or 0; clears it.
  static int take_stop_request();
  // Whether a SIGCHLD arrived since the last call.
  static bool take_child_event();
  // The last signal forwarded to the command, or 0.
  static int last_forwarded();

 private:
  struct sigaction old_[5];
};

}  // namespace sprof::launch
