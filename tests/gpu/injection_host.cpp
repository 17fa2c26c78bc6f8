// Plays the CUDA driver for the injection tests: loads the library named by
// CUDA_INJECTION64_PATH and calls its InitializeInjection (from three threads at once, then
// again: the driver may do either), then runs the scenario argv[1] names. Prints one JSON
// object per line on stdout for test_gpu_injection.py.
//
//   exit             runs ~2 s, exits normally (the injection's atexit handler flushes)
//   underscore-exit  runs ~2.5 s, then _exit(0): no atexit, only the periodic chunks remain
//   sigkill          runs ~2.5 s, then SIGKILL
//   fork             forks after initialisation; the child works, exits normally, and must
//                    neither hang nor write; the parent waits (10 s at most) and exits
//   fail-*           the fake CUPTI fails somewhere: runs briefly, exits 0 all the same
//
// Every scenario first checks that a signal sent to the process is never taken by a thread
// the injection started (the writer blocks every signal).

#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::atomic<long> signal_tid{0};
std::atomic<int> signals_taken{0};

void on_signal(int) {
  signal_tid = long(syscall(SYS_gettid));
  ++signals_taken;
}

// With SIGUSR1 blocked on this (the only other) thread, a process-directed SIGUSR1 can only be
// taken by a thread of the injection; once unblocked here it must arrive here.
bool signals_stay_with_the_target() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGUSR1, &action, nullptr);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  kill(getpid(), SIGUSR1);
  sleep_ms(200);
  bool untouched = signals_taken == 0;
  pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);
  for (int i = 0; i < 100 && signals_taken == 0; ++i) sleep_ms(10);
  return untouched && signals_taken == 1 && signal_tid == long(syscall(SYS_gettid));
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "exit";
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr) {
    std::fprintf(stderr, "CUDA_INJECTION64_PATH is not set\n");
    return 2;
  }
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  if (initialize == nullptr) {
    std::fprintf(stderr, "no InitializeInjection in %s\n", path);
    return 2;
  }

  int64_t start = monotonic_ns();
  std::vector<int> results(4, 0);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) threads.emplace_back([&, i] { results[size_t(i)] = initialize(); });
    for (auto& t : threads) t.join();
  }
  int64_t initialised = monotonic_ns();
  results[3] = initialize();
  std::printf("{\"pid\": %d, \"results\": [%d, %d, %d, %d], \"start_ns\": %lld, \"init_ms\": %.3f}\n", int(getpid()),
              results[0], results[1], results[2], results[3], (long long)start, double(initialised - start) / 1e6);
  std::printf("{\"signals_ok\": %s}\n", signals_stay_with_the_target() ? "true" : "false");
  std::fflush(stdout);

  if (scenario == "exit") {
    sleep_ms(2000);
  } else if (scenario == "underscore-exit" || scenario == "sigkill") {
    sleep_ms(2500);
    std::printf("{\"end_ns\": %lld}\n", (long long)monotonic_ns());
    std::fflush(stdout);
    if (scenario == "sigkill") raise(SIGKILL);
    _exit(0);
  } else if (scenario == "fork") {
    sleep_ms(300);
    pid_t child = fork();
    if (child == 0) {
      // Some work, then a normal exit: atexit handlers (the injection's among them) run here.
      volatile double x = 0;
      for (int i = 0; i < 1000000; ++i) x = x + i * 0.5;
      sleep_ms(300);
      std::exit(0);
    }
    int status = 0;
    bool done = false;
    for (int i = 0; i < 1000 && !done; ++i) {
      pid_t r = waitpid(child, &status, WNOHANG);
      if (r == child) {
        done = true;
      } else {
        sleep_ms(10);
      }
    }
    if (!done) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
    }
    std::printf("{\"child_pid\": %d, \"child_hung\": %s, \"child_exit\": %d}\n", int(child), done ? "false" : "true",
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    std::fflush(stdout);
    sleep_ms(1200);
  } else if (scenario.rfind("fail", 0) == 0) {
    sleep_ms(300);
  } else {
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
  }
  std::printf("{\"end_ns\": %lld}\n", (long long)monotonic_ns());
  std::fflush(stdout);
  return 0;
}
