#include "launch/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace sprof::launch {
namespace {

// The release message: u32 fd count, that many i32 target fd numbers, then "KEY=VALUE\0"...
// The child receives it into memory allocated before fork, so it never calls malloc.
constexpr size_t kMessageCapacity = 256 << 10;
constexpr size_t kMaxFds = 32;
constexpr size_t kEnvCapacity = 8192;

[[noreturn]] void child_fail(int socket, int err) {
  (void)!write(socket, &err, sizeof err);
  _exit(127);
}

bool key_matches(const char* entry, const char* assignment) {
  // Same variable name: both "NAME=..." with equal NAME.
  while (*entry != '\0' && *entry != '=' && *entry == *assignment) {
    ++entry;
    ++assignment;
  }
  return *entry == '=' && *assignment == '=';
}

[[noreturn]] void run_child(int socket, char* const* argv, char* message, char** envp, char* cmsg_space,
                            size_t cmsg_size, const InheritedSignals& signals) {
  // The forwarded signals stay blocked (as in sprof's threads) until just before exec: one sent
  // to this child while it waits is delivered then, with the disposition the command inherits.
  iovec iov{message, kMessageCapacity};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cmsg_space;
  msg.msg_controllen = cmsg_size;
  ssize_t n;
  do {
    n = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 4) _exit(127);  // sprof went away before releasing us

  uint32_t nfds = 0;
  std::memcpy(&nfds, message, 4);
  if (nfds > kMaxFds || size_t(n) < 4 + 4 * size_t(nfds)) child_fail(socket, EINVAL);
  int received[kMaxFds];
  size_t got = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count && got < kMaxFds; ++i) std::memcpy(&received[got++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
  }
  if (got != nfds) child_fail(socket, EBADF);
  // Move received descriptors out of the way first, then onto the numbers the hooks named.
  for (size_t i = 0; i < nfds; ++i) {
    int high = fcntl(received[i], F_DUPFD_CLOEXEC, 512);
    if (high < 0) child_fail(socket, errno);
    close(received[i]);
    received[i] = high;
  }
  for (size_t i = 0; i < nfds; ++i) {
    int target = 0;
    std::memcpy(&target, message + 4 + 4 * i, 4);
    if (dup2(received[i], target) < 0) child_fail(socket, errno);  // dup2 clears FD_CLOEXEC
    close(received[i]);
  }

  // Environment: ours, with the released assignments replacing or adding variables.
  char* blob = message + 4 + 4 * nfds;
  char* blob_end = message + n;
  size_t count = 0;
  for (char** e = environ; *e != nullptr && count < kEnvCapacity - 1; ++e) {
    bool replaced = false;
    for (char* a = blob; a < blob_end; a += std::strlen(a) + 1) {
      if (key_matches(*e, a)) replaced = true;
    }
    if (!replaced) envp[count++] = *e;
  }
  for (char* a = blob; a < blob_end && count < kEnvCapacity - 1; a += std::strlen(a) + 1) envp[count++] = a;
  envp[count] = nullptr;

  signals.restore();
  execvpe(argv[0], argv, envp);
  int err = errno;
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  child_fail(socket, err);
}

}  // namespace

Result<PendingChild> PendingChild::fork_waiting(const std::vector<std::string>& args, const InheritedSignals& signals) {
  if (args.empty()) return make_error(ErrorKind::usage, "no command given");
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return make_error(ErrorKind::runtime, "socketpair: {}", std::strerror(errno));
  }
  // Everything the child needs is allocated here, before fork.
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char> message(kMessageCapacity + 1, '\0');
  std::vector<char*> envp(kEnvCapacity);
  std::vector<char> cmsg(CMSG_SPACE(sizeof(int) * kMaxFds));

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(sv[0]);
    close(sv[1]);
    return make_error(ErrorKind::runtime, "cannot fork: {}", std::strerror(err));
  }
  if (pid == 0) {
    close(sv[0]);
    run_child(sv[1], argv.data(), message.data(), envp.data(), cmsg.data(), cmsg.size(), signals);
  }
  close(sv[1]);
  PendingChild child(pid, sv[0]);
  child.program_ = args[0];
  return child;
}

PendingChild::PendingChild(PendingChild&& other) noexcept
    : pid_(other.pid_), socket_(other.socket_), exec_failure_code_(other.exec_failure_code_),
      program_(std::move(other.program_)) {
  other.pid_ = -1;
  other.socket_ = -1;
}

PendingChild::~PendingChild() {
  if (socket_ >= 0) {
    // Never released: closing the socket makes the child exit without running anything.
    close(socket_);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

Status PendingChild::release(const ChildSetup& setup) {
  if (setup.inherit_fds.size() > kMaxFds) {
    return make_error(ErrorKind::runtime, "too many descriptors to pass to the command ({})", setup.inherit_fds.size());
  }
  std::string payload;
  uint32_t nfds = uint32_t(setup.inherit_fds.size());
  payload.append(reinterpret_cast<const char*>(&nfds), 4);
  for (int fd : setup.inherit_fds) payload.append(reinterpret_cast<const char*>(&fd), 4);
  for (const auto& [key, value] : setup.env) {
    payload += key;
    payload += '=';
    payload += value;
    payload += '\0';
  }
  if (payload.size() > kMessageCapacity) return make_error(ErrorKind::runtime, "environment for the command is too large");

  iovec iov{payload.data(), payload.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> cmsg;
  if (nfds > 0) {
    cmsg.assign(CMSG_SPACE(sizeof(int) * nfds), '\0');
    msg.msg_control = cmsg.data();
    msg.msg_controllen = cmsg.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), setup.inherit_fds.data(), sizeof(int) * nfds);
  }
  ssize_t sent;
  do {
    sent = sendmsg(socket_, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  int socket = socket_;
  socket_ = -1;
  if (sent < 0) {
    int err = errno;
    close(socket);
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    // Dead before it was released: a forwarded signal killed it (pass that status on).
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
      exec_failure_code_ = 128 + WTERMSIG(status);
      return make_error(ErrorKind::runtime, "{} got {} before it started", program_, strsignal(WTERMSIG(status)));
    }
    exec_failure_code_ = 1;
    return make_error(ErrorKind::runtime, "cannot start {}: {}", program_, std::strerror(err));
  }
  // exec closes the child's end (SOCK_CLOEXEC): end of file means it ran; an int is its errno.
  int err = 0;
  ssize_t n;
  do {
    n = recv(socket, &err, sizeof err, 0);
  } while (n < 0 && errno == EINTR);
  close(socket);
  if (n == ssize_t(sizeof err)) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
      exec_failure_code_ = 128 + WTERMSIG(status);
      return make_error(ErrorKind::runtime, "{} got {} before it started", program_, strsignal(WTERMSIG(status)));
    }
    exec_failure_code_ = (err == ENOENT || err == ENOTDIR) ? 127 : 126;
    if (err == ENOENT) return make_error(ErrorKind::usage, "{}: command not found", program_);
    return make_error(ErrorKind::usage, "cannot run {}: {}", program_, std::strerror(err));
  }
  return {};
}

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace sprof::launch
