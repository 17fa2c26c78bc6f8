// A rule program as a child process (rule_program.hpp).

#include "rules/rule_program.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace sprof::rules {
namespace {

constexpr size_t kMaxLine = 1 << 20;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

RuleProgram::RuleProgram(const ProgramRule& rule, double timeout_s, std::vector<std::string> env)
    : rule_(rule), timeout_s_(timeout_s), env_(std::move(env)) {}

RuleProgram::~RuleProgram() { kill_and_reap(); }

Status RuleProgram::start() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return make_error(ErrorKind::io, "no socket pair: {}", std::strerror(errno));
  }
  int report[2];  // the exec's errno, if it fails; closed by a successful exec
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return make_error(ErrorKind::io, "no pipe: {}", std::strerror(errno));
  }
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const auto& extra : env_) {
      size_t eq = extra.find('=');
      if (eq != std::string::npos && entry.substr(0, eq + 1) == std::string_view(extra).substr(0, eq + 1)) {
        replaced = true;
      }
    }
    if (!replaced) env_strings.emplace_back(entry);
  }
  env_strings.insert(env_strings.end(), env_.begin(), env_.end());
  std::vector<char*> envp, argv;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (auto& a : rule_.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  pid_t child = ::fork();
  if (child < 0) {
    int e = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    ::close(report[0]);
    ::close(report[1]);
    return make_error(ErrorKind::io, "fork: {}", std::strerror(e));
  }
  if (child == 0) {
    ::setpgid(0, 0);  // its own group: a timeout kills what it started too
    // The recorder blocks the termination signals in its threads; the program must not inherit that.
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // A copy above 2 without close-on-exec, so that a socket that got fd 0 or 1 still reaches both.
    int s = ::fcntl(sv[1], F_DUPFD, 3);
    ::dup2(s, 0);
    ::dup2(s, 1);
    ::close(s);
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    ssize_t ignored = ::write(report[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::close(sv[1]);
  ::close(report[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(report[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  ::setpgid(child, child);  // also here: no race with a kill before the child ran
  pid_ = child;
  group_ = child;
  fd_ = sv[0];
  if (n == sizeof exec_errno) {
    kill_and_reap();
    return make_error(ErrorKind::usage, "cannot run {}: {}", rule_.argv[0], std::strerror(exec_errno));
  }
  return {};
}

void RuleProgram::kill_and_reap() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  // The group even when the program itself has exited: what it started must not outlive it.
  if (group_ > 0) ::kill(-group_, SIGKILL);
  group_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

std::string RuleProgram::exit_description(bool wait) {
  if (pid_ <= 0) return "it is not running";
  int status = 0;
  pid_t r = 0;
  for (int i = 0; i < (wait ? 50 : 1); ++i) {
    r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (r != pid_) return "it closed its output";
  pid_ = -1;
  if (WIFEXITED(status)) return fmt::format("it exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("it was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "it ended";
}

Result<std::string> RuleProgram::exchange(std::string records, int64_t seq, bool final) {
  if (pid_ <= 0) SPROF_TRY_STATUS(start());
  std::string out = std::move(records);
  out += nlohmann::json{{"type", "evaluate"}, {"seq", seq}, {"final", final}}.dump();
  out += '\n';
  size_t sent = 0;
  const int64_t timeout_ms = int64_t(timeout_s_ * 1000);
  int64_t deadline = now_ms() + timeout_ms;
  auto fail = [this](std::string why) -> Result<std::string> {
    kill_and_reap();
    return make_error(ErrorKind::runtime, "{}", why);
  };
  for (;;) {
    // A whole line may already be here.
    for (size_t nl = input_.find('\n'); nl != std::string::npos; nl = input_.find('\n')) {
      std::string line = input_.substr(0, nl);
      input_.erase(0, nl + 1);
      if (line.empty() || line.find_first_not_of(" \t\r") == std::string::npos) continue;
      return line;
    }
    if (input_.size() > kMaxLine) return fail("it wrote a line longer than 1 MiB");
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      return fail(fmt::format("it did not answer within {} s (--rule-timeout)", timeout_s_));
    }
    pollfd p{fd_, short(POLLIN | (sent < out.size() ? POLLOUT : 0)), 0};
    int r = ::poll(&p, 1, int(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno != EINTR) return fail(fmt::format("poll: {}", std::strerror(errno)));
    if (r <= 0) continue;
    if ((p.revents & POLLOUT) != 0 && sent < out.size()) {
      ssize_t n = ::send(fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += size_t(n);
        deadline = now_ms() + timeout_ms;  // it reads: a long backlog is not a hang
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return fail(fmt::format("it stopped reading its input: {}", exit_description(true)));
      }
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char buffer[65536];
      ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n > 0) {
        input_.append(buffer, size_t(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        return fail(fmt::format("it gave no verdict: {}", exit_description(true)));
      }
    }
  }
}

void RuleProgram::close() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
  if (pid_ > 0) {
    int64_t deadline = now_ms() + int64_t(std::min(timeout_s_, 5.0) * 1000);
    int status = 0;
    while (now_ms() < deadline) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  kill_and_reap();
}

}  // namespace sprof::rules
