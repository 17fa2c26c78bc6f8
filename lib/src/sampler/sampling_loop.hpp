#pragma once
// The sampling loop of a recording, on the calling thread: a tick at each time the rate timer
// draws, the caller's housekeeping between ticks at a fixed period, and sleep in between (a
// signal, SIGCHLD included, cuts a sleep short). What a tick samples is the caller's (the
// processes it follows); the loop keeps the time and counts the ticks.

#include <cstdint>
#include <functional>
#include <memory>

#include "sampler/rate_timer.hpp"

namespace sprof::sampler {

struct LoopOptions {
  double rate_hz = 100;
  uint64_t seed = 1;
  int64_t start_ns = 0;         // CLOCK_MONOTONIC
  int64_t deadline_ns = INT64_MAX;  // no sleep goes past it (housekeeping decides to stop there)
  int64_t housekeeping_ns = 20'000'000;
  // The nice value the loop asks for while it waits for and takes samples (0: the thread's own).
  // A sampler kept waiting by a busy machine samples late, and what a late sample sees is biased
  // toward the work that kept the CPU busy, not a random moment: on two cores shared by two busy
  // Python processes, 0.3 ms of a 2 ms function went to the next one. A higher priority lets it
  // run when it is due. Lowering the nice value needs CAP_SYS_NICE (or RLIMIT_NICE); without it
  // the loop runs as it is. Housekeeping runs at the thread's own priority, so that threads and
  // processes started from it do not inherit the raised one.
  int sampling_nice = -10;
};

class SamplingLoop {
 public:
  explicit SamplingLoop(const LoopOptions& options);

  // Runs until stop() is true after a tick or housekeeping. tick(now) samples and says whether
  // anything was sampled (only those ticks count); housekeeping(now) runs at least every
  // housekeeping_ns. Both run at sampling_nice where permitted: a housekeeping preempted by
  // busy work would hold back the ticks behind it (10-17 ms gaps every few hundred ms with two
  // busy processes on two cores).
  void run(const std::function<bool(int64_t now_ns)>& tick, const std::function<void(int64_t now_ns)>& housekeeping,
           const std::function<bool()>& stop);

  // Runs fn at the thread's own priority: for work during housekeeping that may start threads
  // or processes (hooks: rule programs, actions, uploads), which would inherit the raised one.
  void at_own_priority(const std::function<void()>& fn);

  uint64_t ticks() const { return ticks_; }               // ticks that sampled something
  int64_t tick_wall_ns() const { return tick_wall_ns_; }  // their summed wall time
  int64_t max_tick_ns() const { return max_tick_ns_; }
  const RateTimer& timer() const { return timer_; }
  bool raised_priority() const { return raised_; }  // whether sampling_nice was granted

 private:
  LoopOptions options_;
  RateTimer timer_;
  int64_t next_behind_warning_ns_ = 0;
  uint64_t ticks_ = 0;
  int64_t tick_wall_ns_ = 0;
  int64_t max_tick_ns_ = 0;
  bool raised_ = false;
  int own_nice_ = 0;
};

}  // namespace sprof::sampler
