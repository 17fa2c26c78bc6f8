#pragma once
// When to take the next sample. Gaps are drawn from an exponential distribution with the mean
// 1/rate (Poisson sampling, as py-spy does), so periodic work in the target cannot alias with a
// fixed sampling period; each sample is weighted by the interval actually measured, so jitter
// and lateness do not bias time estimates.

#include <cstdint>
#include <random>

namespace sprof::sampler {

class RateTimer {
 public:
  RateTimer(double rate_hz, uint64_t seed, int64_t start_ns);

  int64_t due_ns() const { return due_ns_; }
  int64_t mean_interval_ns() const { return mean_ns_; }

  // The tick that was due started at `now_ns`; `counted`: it sampled something and so counts
  // among the recording's ticks (late_ticks() never exceeds those). Returns true when a counted
  // tick had fallen more than a second behind: the backlog is dropped and the caller should warn.
  bool on_tick(int64_t now_ns, bool counted = true);

  uint64_t late_ticks() const { return late_ticks_; }
  int64_t max_lag_ns() const { return max_lag_ns_; }
  int64_t last_lag_ns() const { return last_lag_ns_; }
  uint64_t behind_events() const { return behind_events_; }

 private:
  int64_t mean_ns_;
  int64_t due_ns_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> gap_;
  uint64_t late_ticks_ = 0;
  int64_t max_lag_ns_ = 0;
  int64_t last_lag_ns_ = 0;
  uint64_t behind_events_ = 0;
};

}  // namespace sprof::sampler
