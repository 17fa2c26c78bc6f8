#pragma once
// The statistics `sprof diff` decides with: how sure a change between two runs is, so that a CI
// gate fails on a regression and not on noise.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sprof::report {

struct ConfidenceInterval {
  double lo = 0;
  double hi = 0;
  bool excludes_zero() const { return lo > 0 || hi < 0; }
};

// The standard normal's quantile (Acklam's rational approximation, relative error < 1.2e-9) and
// Student's t quantile (Hill's expansion, exact enough for intervals from 2 degrees of freedom).
double normal_quantile(double p);
double student_t_quantile(double p, double degrees_of_freedom);

// Percentile bootstrap interval of median(next) - median(base): `resamples` resamples of each side
// drawn with a fixed seed, so one pair of runs always gives the same interval. Empty side: {0, 0}.
ConfidenceInterval bootstrap_median_difference(std::span<const double> base, std::span<const double> next,
                                               double confidence, int resamples, uint64_t seed = 0x5EED);

// Two-sided p-value of the Mann–Whitney U test (normal approximation with the tie correction and a
// continuity correction, as scipy's mannwhitneyu(method="asymptotic")); 1 when a side is empty.
double mann_whitney_p(std::span<const double> base, std::span<const double> next);

// A quantity's sum and sum of squares over a number of units (steps), the units without it
// counting as zeros: Welch's interval of a difference of means needs no more.
struct Moments {
  double n = 0;
  double sum = 0;
  double sum_sq = 0;
  void add(double x) {
    n += 1;
    sum += x;
    sum_sq += x * x;
  }
  double mean() const { return n > 0 ? sum / n : 0; }
  double variance() const;  // sample variance (n - 1); 0 under two units
};

// Welch's interval of mean(next) - mean(base), Welch–Satterthwaite's degrees of freedom. A side of
// fewer than two units has no variance to go on: the interval is then the whole line.
ConfidenceInterval welch_difference(const Moments& base, const Moments& next, double confidence);

}  // namespace sprof::report
