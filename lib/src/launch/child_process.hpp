#pragma once
// Starting the profiled command in two steps: fork() a child that waits, so its pid is known
// (it names the default output directory) before anything runs; then release() it with the
// environment and descriptors the record hooks prepared, and learn whether exec worked.

#include <sys/types.h>

#include <string>
#include <vector>

#include "launch/signals.hpp"
#include "sprof/launch.hpp"
#include "sprof/result.hpp"

namespace sprof::launch {

class PendingChild {
 public:
  // Forks; the child waits for release() with the guard's signals blocked, and gets `signals`
  // back just before exec. Fails only when fork or socketpair fail.
  static Result<PendingChild> fork_waiting(const std::vector<std::string>& argv, const InheritedSignals& signals);

  PendingChild(PendingChild&& other) noexcept;
  PendingChild& operator=(PendingChild&&) = delete;
  ~PendingChild();  // a child never released is killed and reaped

  pid_t pid() const { return pid_; }

  // Sends `setup` and lets the child exec. On exec failure the child has exited (and was
  // reaped) and the error says why; exec_failure_exit_code() then is 127 (not found), 126 (not
  // runnable), 128+N (a forwarded signal N killed it first) or 1.
  Status release(const ChildSetup& setup);
  int exec_failure_exit_code() const { return exec_failure_code_; }

 private:
  PendingChild(pid_t pid, int socket) : pid_(pid), socket_(socket) {}
  pid_t pid_ = -1;
  int socket_ = -1;
  int exec_failure_code_ = 0;
  std::string program_;
};

// 128+N for death by signal N, the exit status otherwise (waitpid's status word).
int exit_code_from_wait_status(int status);

}  // namespace sprof::launch
