// The bootstrap's resampled median drawn by binomial descent has the law of a real resample's
// median: against resampling and selecting, on odd and even sizes, with ties.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "report/resampled_median.hpp"

namespace {

double brute_median(const std::vector<double>& sorted, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, sorted.size() - 1);
  std::vector<double> v(sorted.size());
  for (double& x : v) x = sorted[pick(rng)];
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(n / 2), v.end());
  const double upper = v[n / 2];
  return n % 2 == 1 ? upper : (*std::max_element(v.begin(), v.begin() + std::ptrdiff_t(n / 2)) + upper) / 2;
}

struct Moments {
  double mean = 0, sd = 0;
};

template <typename Draw>
Moments moments(int draws, Draw&& draw) {
  double sum = 0, sum2 = 0;
  for (int i = 0; i < draws; ++i) {
    const double x = draw();
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / draws;
  return {mean, std::sqrt(sum2 / draws - mean * mean)};
}

}  // namespace

TEST_CASE("diff statistics: the resampled median by binomial descent has a resample's law", "[diff]") {
  for (size_t n : {1u, 2u, 3u, 301u, 400u}) {
    for (bool ties : {false, true}) {
      // Values that are their own rank (ties: every value twice), so a shift of the law by one
      // rank moves the mean by about one.
      std::vector<double> sorted;
      for (size_t i = 0; i < n; ++i) sorted.push_back(ties ? double(i / 2) : double(i));
      const int draws = 50000;
      std::mt19937_64 rng_exact(7), rng_brute(11);
      sprof::report::ResampledMedian exact(sorted);
      Moments e = moments(draws, [&] { return exact.draw(rng_exact); });
      Moments b = moments(draws, [&] { return brute_median(sorted, rng_brute); });
      INFO("n " << n << (ties ? " with ties" : "") << ": exact " << e.mean << " ± " << e.sd << ", resampled "
                << b.mean << " ± " << b.sd);
      // Five standard errors of the difference of the two means; the spreads within 5 %.
      const double se = std::sqrt((e.sd * e.sd + b.sd * b.sd) / draws);
      CHECK(std::abs(e.mean - b.mean) <= 5 * se + 1e-12);
      CHECK(std::abs(e.sd - b.sd) <= 0.05 * b.sd + 1e-12);
      if (n >= 301) CHECK(5 * se < 0.35);  // sharp enough to see a law off by one rank
    }
  }
}
