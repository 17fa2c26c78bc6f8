#include "sampler/sampling_loop.hpp"
#include "sprof/clock.hpp"

#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

namespace sprof::sampler {
namespace {

constexpr int64_t kMs = 1'000'000;

// Linux keeps a nice value per thread: PRIO_PROCESS with a thread id sets this thread's only.
pid_t this_thread_id() { return pid_t(::syscall(SYS_gettid)); }

int nice_of_this_thread() {
  errno = 0;
  int value = ::getpriority(PRIO_PROCESS, id_t(this_thread_id()));
  return errno == 0 ? value : 0;
}

bool set_nice_of_this_thread(int value) { return ::setpriority(PRIO_PROCESS, id_t(this_thread_id()), value) == 0; }

}  // namespace

SamplingLoop::SamplingLoop(const LoopOptions& options)
    : options_(options), timer_(options.rate_hz, options.seed, options.start_ns) {}

void SamplingLoop::run(const std::function<bool(int64_t)>& tick, const std::function<void(int64_t)>& housekeeping,
                       const std::function<bool()>& stop) {
  int64_t next_housekeeping = options_.start_ns;
  const int own_nice = nice_of_this_thread();
  own_nice_ = own_nice;
  raised_ = options_.sampling_nice < own_nice && set_nice_of_this_thread(options_.sampling_nice);
  if (options_.sampling_nice < own_nice) {
    if (raised_) {
      spdlog::debug("sampling at nice {}", options_.sampling_nice);
    } else {
      spdlog::debug("sampling at nice {}: nice {} not permitted ({})", own_nice, options_.sampling_nice,
                    std::strerror(errno));
    }
  }
  while (!stop()) {
    int64_t now = monotonic_ns();
    if (now >= timer_.due_ns()) {
      bool sampled = tick(now);
      if (sampled) {
        ++ticks_;
        int64_t took = monotonic_ns() - now;
        tick_wall_ns_ += took;
        max_tick_ns_ = std::max(max_tick_ns_, took);
      }
      if (timer_.on_tick(now, sampled) && now >= next_behind_warning_ns_) {
        spdlog::warn("sampling fell more than 1 s behind (lag {:.1f} s); results stay unbiased but sparser. "
                     "Try a lower --rate",
                     double(timer_.last_lag_ns()) / 1e9);
        next_behind_warning_ns_ = now + 10'000 * kMs;
      }
      now = monotonic_ns();
    }
    if (now >= next_housekeeping) {
      housekeeping(now);
      int64_t took = monotonic_ns() - now;
      if (took > 20 * kMs) spdlog::debug("housekeeping took {:.1f} ms", double(took) / 1e6);
      next_housekeeping = now + options_.housekeeping_ns;
    }
    if (stop()) break;
    int64_t wake = std::min({timer_.due_ns(), next_housekeeping, options_.deadline_ns});
    if (wake > now) {
      timespec ts{time_t(wake / 1'000'000'000), long(wake % 1'000'000'000)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);  // EINTR: a signal; loop on
    }
  }
  if (raised_) set_nice_of_this_thread(own_nice);
}

void SamplingLoop::at_own_priority(const std::function<void()>& fn) {
  if (raised_) set_nice_of_this_thread(own_nice_);
  fn();
  if (raised_) set_nice_of_this_thread(options_.sampling_nice);
}

}  // namespace sprof::sampler
