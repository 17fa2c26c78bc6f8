#include "launch/signals.hpp"

#include <unistd.h>

#include <cerrno>

namespace sprof::launch {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_stop_request = 0;
volatile sig_atomic_t g_child_event = 0;
volatile sig_atomic_t g_forwarded = 0;

void on_signal(int sig, siginfo_t* info, void*) {
  int saved_errno = errno;
  if (sig == SIGCHLD) {
    g_child_event = 1;
  } else if (pid_t child = g_child; child > 0) {
    // si_code > 0 means the kernel sent it: a terminal's ^C/^\ or hangup, which went to the
    // whole foreground process group. The command already has it, unless it left our group.
    bool from_kernel = info != nullptr && info->si_code > 0;
    if (!from_kernel || getpgid(child) != getpgrp()) {
      kill(child, sig);
      g_forwarded = sig;
    }
  } else {
    g_stop_request = sig;
  }
  errno = saved_errno;
}

}  // namespace

SignalGuard::SignalGuard() {
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < 5; ++i) sigaction(kSignals[i], &sa, &old_[i]);
}

SignalGuard::~SignalGuard() {
  g_child = 0;
  for (size_t i = 0; i < 5; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

void SignalGuard::forward_to(pid_t pid) { g_child = pid; }

int SignalGuard::take_stop_request() {
  int sig = g_stop_request;
  g_stop_request = 0;
  return sig;
}

bool SignalGuard::take_child_event() {
  bool event = g_child_event != 0;
  g_child_event = 0;
  return event;
}

int SignalGuard::last_forwarded() { return g_forwarded; }

}  // namespace sprof::launch
