#include "sprof/diff_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "report/resampled_median.hpp"
#include "rules/numeric.hpp"

namespace sprof::report {

double normal_quantile(double p) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double low = 0.02425;
  if (p < low) {
    double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - low) return -normal_quantile(1 - p);
  double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double student_t_quantile(double p, double df) {
  // G. W. Hill (1970), Algorithm 396's asymptotic expansion in 1/df around the normal quantile.
  if (!(df > 0) || std::isinf(df) || df > 1e7) return normal_quantile(p);
  double z = normal_quantile(p);
  double z2 = z * z;
  double g1 = (z2 + 1) * z / 4;
  double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
  double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
  double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
  return z + g1 / df + g2 / (df * df) + g3 / (df * df * df) + g4 / (df * df * df * df);
}

ConfidenceInterval bootstrap_median_difference(std::span<const double> base, std::span<const double> next,
                                               double confidence, int resamples, uint64_t seed) {
  if (base.empty() || next.empty() || resamples <= 0) return {};
  std::mt19937_64 rng(seed);
  std::vector<double> a(base.begin(), base.end()), b(next.begin(), next.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  ResampledMedian median_a(a), median_b(b);
  std::vector<double> differences;
  differences.reserve(static_cast<size_t>(resamples));
  for (int i = 0; i < resamples; ++i) {
    const double ma = median_a.draw(rng);
    differences.push_back(median_b.draw(rng) - ma);
  }
  std::sort(differences.begin(), differences.end());
  double tail = (1 - confidence) / 2;
  return {rules::quantile_sorted(differences, tail), rules::quantile_sorted(differences, 1 - tail)};
}

double mann_whitney_p(std::span<const double> base, std::span<const double> next) {
  const double n1 = static_cast<double>(base.size()), n2 = static_cast<double>(next.size());
  if (base.empty() || next.empty()) return 1;
  std::vector<std::pair<double, int>> all;
  all.reserve(base.size() + next.size());
  for (double x : base) all.emplace_back(x, 0);
  for (double x : next) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  // Midranks; ties add t^3 - t to the correction of the variance.
  double rank_sum_base = 0, ties = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (all[k].second == 0) rank_sum_base += rank;
    }
    double t = static_cast<double>(j - i);
    ties += t * t * t - t;
    i = j;
  }
  double u = rank_sum_base - n1 * (n1 + 1) / 2;
  double mean = n1 * n2 / 2;
  double n = n1 + n2;
  double variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (variance <= 0) return 1;
  double z = (std::abs(u - mean) - 0.5) / std::sqrt(variance);
  if (z < 0) z = 0;
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

double Moments::variance() const {
  if (n < 2) return 0;
  double v = (sum_sq - sum * sum / n) / (n - 1);
  return v > 0 ? v : 0;
}

ConfidenceInterval welch_difference(const Moments& base, const Moments& next, double confidence) {
  double delta = next.mean() - base.mean();
  if (base.n < 2 || next.n < 2) {
    double inf = std::numeric_limits<double>::infinity();
    return {-inf, inf};
  }
  double va = base.variance() / base.n, vb = next.variance() / next.n;
  double se2 = va + vb;
  if (se2 <= 0) return {delta, delta};
  double df = se2 * se2 / (va * va / (base.n - 1) + vb * vb / (next.n - 1));
  double t = student_t_quantile(1 - (1 - confidence) / 2, df);
  double half = t * std::sqrt(se2);
  return {delta - half, delta + half};
}

}  // namespace sprof::report
