#include "sampler/rate_timer.hpp"

#include <algorithm>

namespace sprof::sampler {

namespace {
constexpr int64_t kBehindLimitNs = 1'000'000'000;
}

RateTimer::RateTimer(double rate_hz, uint64_t seed, int64_t start_ns)
    : mean_ns_(std::max<int64_t>(1, int64_t(1e9 / rate_hz))), due_ns_(start_ns), rng_(seed), gap_(1.0) {}

bool RateTimer::on_tick(int64_t now_ns, bool counted) {
  int64_t lag = now_ns - due_ns_;
  last_lag_ns_ = std::max<int64_t>(lag, 0);
  if (counted) {
    max_lag_ns_ = std::max(max_lag_ns_, lag);
    if (lag > mean_ns_) ++late_ticks_;
  }
  bool behind = lag > kBehindLimitNs;
  if (behind) {
    if (counted) ++behind_events_;
    due_ns_ = now_ns;  // drop the backlog either way
  }
  due_ns_ += std::max<int64_t>(1, int64_t(gap_(rng_) * double(mean_ns_)));
  return behind && counted;
}

}  // namespace sprof::sampler
