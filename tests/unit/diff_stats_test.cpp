// The statistics sprof diff decides with, against published values and cases with known answers.

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "sprof/diff_stats.hpp"

using namespace sprof::report;

TEST_CASE("diff statistics: normal and t quantiles match the tables") {
  CHECK(normal_quantile(0.975) == Approx(1.959964).epsilon(1e-6));
  CHECK(normal_quantile(0.5) == Approx(0).margin(1e-12));
  CHECK(normal_quantile(0.001) == Approx(-3.090232).epsilon(1e-6));
  // Student's t, two-sided 95 %: the textbook table.
  CHECK(student_t_quantile(0.975, 30) == Approx(2.042272).epsilon(1e-4));
  CHECK(student_t_quantile(0.975, 10) == Approx(2.228139).epsilon(1e-3));
  CHECK(student_t_quantile(0.975, 5) == Approx(2.570582).epsilon(5e-3));
  CHECK(student_t_quantile(0.975, 1e9) == Approx(1.959964).epsilon(1e-6));
}

TEST_CASE("diff statistics: Mann-Whitney U, normal approximation with tie and continuity corrections") {
  std::vector<double> a = {1, 2, 3, 4, 5}, b = {6, 7, 8, 9, 10};
  // U = 0, mean 12.5, variance 25 * 11 / 12; z = (12.5 - 0.5) / sqrt(22.9167).
  CHECK(mann_whitney_p(a, b) == Approx(std::erfc(12.0 / std::sqrt(25.0 * 11 / 12) / std::sqrt(2.0))).epsilon(1e-9));
  CHECK(mann_whitney_p(a, a) == Approx(1));
  std::vector<double> tied = {1, 1, 1, 1}, other = {1, 1, 1, 1};
  CHECK(mann_whitney_p(tied, other) == 1);  // no variance: nothing to tell apart
  CHECK(mann_whitney_p({}, b) == 1);
}

TEST_CASE("diff statistics: Welch's interval covers the true difference about as often as it says") {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> base(10, 2), next(10.5, 3);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    Moments a, b;
    for (int i = 0; i < 20; ++i) a.add(base(rng));
    for (int i = 0; i < 30; ++i) b.add(next(rng));
    ConfidenceInterval ci = welch_difference(a, b, 0.95);
    covered += ci.lo <= 0.5 && 0.5 <= ci.hi;
  }
  // 95 % of 2000 with a binomial standard error of ~10: 1900 ± 30 holds it at 3 sigma.
  CHECK(covered > 1870);
  CHECK(covered < 1930);
  Moments one;
  one.add(1);
  CHECK(std::isinf(welch_difference(one, one, 0.95).hi));  // too few units: no interval
}

TEST_CASE("diff statistics: units without the quantity count as zeros") {
  Moments m;
  m.add(2);
  m.add(4);
  m.n = 4;  // two more steps without it
  CHECK(m.mean() == Approx(1.5));
  CHECK(m.variance() == Approx((20 - 36.0 / 4) / 3));  // of {2, 4, 0, 0}
}

TEST_CASE("diff statistics: the bootstrap interval of a median difference") {
  std::vector<double> a, b;
  for (int i = 0; i < 200; ++i) {
    a.push_back(10 + (i % 7) * 0.1);
    b.push_back(11 + (i % 7) * 0.1);
  }
  ConfidenceInterval shifted = bootstrap_median_difference(a, b, 0.95, 2000);
  CHECK(shifted.lo == Approx(1).margin(0.11));
  CHECK(shifted.hi == Approx(1).margin(0.11));
  CHECK(shifted.excludes_zero());
  ConfidenceInterval same = bootstrap_median_difference(a, a, 0.95, 2000);
  CHECK(same.lo <= 0);
  CHECK(same.hi >= 0);
  // The same inputs, the same interval: a CI gate never flips on a rerun of the diff.
  ConfidenceInterval again = bootstrap_median_difference(a, b, 0.95, 2000);
  CHECK(again.lo == shifted.lo);
  CHECK(again.hi == shifted.hi);
}
