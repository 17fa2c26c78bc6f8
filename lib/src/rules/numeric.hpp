#pragma once
// numpy's numerics as smdebug's rules use them, reproduced closely enough that thresholds fall on the
// same side: linear quantiles (Hyndman–Fan type 7, numpy's _lerp), pairwise-summed means, population
// std (ddof=0), np.median, np.histogram (equal-width bins or explicit edges), Python's round().

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace sprof::rules {

double pairwise_sum(std::span<const double> values);  // numpy's pairwise summation
double mean(std::span<const double> values);           // np.mean (0 for an empty span)
double population_std(std::span<const double> values); // np.std, ddof=0
double quantile(std::span<const double> values, double q);            // np.quantile(values, q)
double quantile_sorted(std::span<const double> sorted, double q);      // same, input already sorted
double median(std::span<const double> values);                        // np.median
double python_round(double value, int digits);                        // round(value, digits)

struct Histogram {
  std::vector<int64_t> counts;
  std::vector<double> edges;
};
// np.histogram(values, bins=n): n equal bins over [min, max] ([x-0.5, x+0.5] when all equal, [0, 1]
// when empty); the last bin is closed.
Histogram histogram(std::span<const double> values, int bins);
// np.histogram(values, bins=edges): bins [e_i, e_i+1), the last closed; values outside are dropped.
std::vector<int64_t> histogram_with_edges(std::span<const double> values, std::span<const double> edges);

// Half-open time ranges [first, second): their union, sorted and disjoint.
using TimeRange = std::pair<int64_t, int64_t>;
std::vector<TimeRange> union_of(std::vector<TimeRange> ranges);

// Box-plot numbers the rules write: p25, p50, p75, p95 over all values, whiskers clipped to the data.
struct BoxStats {
  double p25 = 0, p50 = 0, p75 = 0, p95 = 0, min = 0, max = 0;
};
BoxStats box_stats(std::span<const double> values);

}  // namespace sprof::rules
