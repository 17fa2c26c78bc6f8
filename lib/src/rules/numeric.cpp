#include "rules/numeric.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace sprof::rules {

double pairwise_sum(std::span<const double> a) {
  // numpy/core/src/umath/loops_utils.h.src: pairwise_sum with 8 accumulators and 128-element leaves.
  const size_t n = a.size();
  if (n < 8) {
    double res = 0.0;
    for (double v : a) res += v;
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int k = 0; k < 8; ++k) r[k] += a[i + k];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a.subspan(0, n2)) + pairwise_sum(a.subspan(n2));
}

double mean(std::span<const double> values) {
  if (values.empty()) return 0.0;
  return pairwise_sum(values) / static_cast<double>(values.size());
}

double population_std(std::span<const double> values) {
  if (values.empty()) return 0.0;
  double m = mean(values);
  std::vector<double> sq(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    double d = std::abs(values[i] - m);
    sq[i] = d * d;
  }
  return std::sqrt(pairwise_sum(sq) / static_cast<double>(values.size()));
}

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0.0;
  const size_t n = sorted.size();
  double virtual_index = static_cast<double>(n - 1) * q;
  double previous = std::floor(virtual_index);
  if (previous < 0) previous = 0;
  if (previous > static_cast<double>(n - 1)) previous = static_cast<double>(n - 1);
  size_t lo = static_cast<size_t>(previous);
  size_t hi = std::min(lo + 1, n - 1);
  double gamma = virtual_index - previous;
  double a = sorted[lo], b = sorted[hi];
  // numpy's _lerp: a + (b-a)*t, computed from the upper end when t >= 0.5.
  double diff = b - a;
  if (gamma >= 0.5) return b - diff * (1.0 - gamma);
  return a + diff * gamma;
}

double quantile(std::span<const double> values, double q) {
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return quantile_sorted(sorted, q);
}

double median(std::span<const double> values) {
  if (values.empty()) return 0.0;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  if (n % 2 == 1) return sorted[n / 2];
  return (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

double python_round(double value, int digits) {
  // Python rounds the exact binary value, halves to even; printf does the same.
  if (!std::isfinite(value)) return value;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return std::strtod(buffer, nullptr);
}

Histogram histogram(std::span<const double> values, int bins) {
  Histogram h;
  double first = 0.0, last = 1.0;
  if (!values.empty()) {
    auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    first = *lo;
    last = *hi;
  }
  if (first == last) {
    first -= 0.5;
    last += 0.5;
  }
  // np.linspace(first, last, bins + 1): i * step + start, the last edge exactly `last`.
  double step = (last - first) / bins;
  h.edges.resize(bins + 1);
  for (int i = 0; i <= bins; ++i) h.edges[i] = i * step + first;
  h.edges[bins] = last;
  h.counts.assign(bins, 0);
  double norm = bins / (last - first);
  for (double v : values) {
    if (!(v >= first && v <= last)) continue;
    int64_t index = static_cast<int64_t>((v - first) * norm);
    if (index == bins) index -= 1;
    if (v < h.edges[index]) index -= 1;
    else if (index != bins - 1 && v >= h.edges[index + 1]) index += 1;
    h.counts[index] += 1;
  }
  return h;
}

std::vector<int64_t> histogram_with_edges(std::span<const double> values, std::span<const double> edges) {
  if (edges.size() < 2) return {};
  std::vector<int64_t> counts(edges.size() - 1, 0);
  for (double v : values) {
    if (!(v >= edges.front() && v <= edges.back())) continue;
    // Index of the bin [e_i, e_i+1) holding v; the last bin also holds the last edge.
    auto it = std::upper_bound(edges.begin(), edges.end(), v);
    size_t index = static_cast<size_t>(it - edges.begin());
    if (index == edges.size()) index = edges.size() - 1;
    counts[index - 1] += 1;
  }
  return counts;
}

BoxStats box_stats(std::span<const double> values) {
  BoxStats box;
  if (values.empty()) return box;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  box.p25 = quantile_sorted(sorted, 0.25);
  box.p50 = quantile_sorted(sorted, 0.50);
  box.p75 = quantile_sorted(sorted, 0.75);
  box.p95 = quantile_sorted(sorted, 0.95);
  box.min = sorted.front();
  box.max = sorted.back();
  return box;
}

std::vector<TimeRange> union_of(std::vector<TimeRange> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<TimeRange> out;
  for (const TimeRange& r : ranges) {
    if (!out.empty() && r.first <= out.back().second) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace sprof::rules
