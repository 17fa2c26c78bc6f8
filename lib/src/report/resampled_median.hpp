#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace sprof::report {

// The median of one bootstrap resample of `sorted` (n draws with replacement), drawn without
// drawing the n values: a resample's order statistics follow from how many of its draws fall
// below each point, and the number of draws in the left half of a range of indices is binomial,
// so descending to the middle ranks takes one binomial draw per halving, O(log n), where
// resampling and selecting take O(n). The law is the resample's exactly: the interval is the
// same percentile bootstrap, at 38,400 steps a side in milliseconds instead of seconds.
class ResampledMedian {
 public:
  explicit ResampledMedian(std::span<const double> sorted) : sorted_(sorted) {}

  template <typename Rng>
  double draw(Rng& rng) {
    const int64_t n = static_cast<int64_t>(sorted_.size());
    int64_t lo = 0, hi = n, k = n;
    const int64_t r1 = (n - 1) / 2, r2 = n / 2;  // 0-based middle ranks (equal for odd n)
    int64_t rank1 = r1, rank2 = r2;
    // Both middle ranks in one range while they fall in the same half.
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      const int64_t left = binomial(rng, k, double(mid - lo) / double(hi - lo));
      if (rank2 < left) {
        hi = mid;
        k = left;
      } else if (rank1 >= left) {
        lo = mid;
        k -= left;
        rank1 -= left;
        rank2 -= left;
      } else {  // the lower rank is the left half's largest draw, the upper the right half's smallest
        const int64_t a = descend(rng, lo, mid, left, rank1);
        const int64_t b = descend(rng, mid, hi, k - left, rank2 - left);
        return (sorted_[size_t(a)] + sorted_[size_t(b)]) / 2;
      }
    }
    return sorted_[size_t(lo)];
  }

 private:
  template <typename Rng>
  static int64_t binomial(Rng& rng, int64_t trials, double p) {
    if (trials == 0 || p <= 0) return 0;
    if (p >= 1) return trials;
    return std::binomial_distribution<int64_t>(trials, p)(rng);
  }

  // The index of the rank-th smallest (0-based) of k uniform draws from [lo, hi).
  template <typename Rng>
  static int64_t descend(Rng& rng, int64_t lo, int64_t hi, int64_t k, int64_t rank) {
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      const int64_t left = binomial(rng, k, double(mid - lo) / double(hi - lo));
      if (rank < left) {
        hi = mid;
        k = left;
      } else {
        lo = mid;
        k -= left;
        rank -= left;
      }
    }
    return lo;
  }

  std::span<const double> sorted_;
};

}  // namespace sprof::report
