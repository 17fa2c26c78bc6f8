// The numpy conventions smdebug's rules depend on, on values small enough to work out by hand.

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rules/numeric.hpp"

using namespace sprof::rules;

TEST_CASE("quantiles are numpy's linear interpolation", "[rules][numeric]") {
  std::vector<double> v = {4, 1, 3, 2};  // sorted 1 2 3 4; index (n-1)q
  CHECK(quantile(v, 0.95) == Approx(3.85));  // 2.85 -> 3 + 0.85
  CHECK(quantile(v, 0.05) == Approx(1.15));
  CHECK(quantile(v, 0.5) == 2.5);
  CHECK(quantile(v, 1.0) == 4);
  CHECK(quantile(v, 0.0) == 1);
  CHECK(quantile(std::vector<double>{7}, 0.95) == 7);
  CHECK(median(v) == 2.5);
  CHECK(median(std::vector<double>{5, 1, 3}) == 3);
}

TEST_CASE("mean and population std", "[rules][numeric]") {
  std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};  // mean 5, population variance 4
  CHECK(mean(v) == 5);
  CHECK(population_std(v) == 2);
  std::vector<double> many(1000, 0.1);  // pairwise summation: exact to the last bits for equal values
  CHECK(mean(many) == Approx(0.1).epsilon(1e-15));
}

TEST_CASE("round() as Python rounds", "[rules][numeric]") {
  CHECK(python_round(2.675, 2) == 2.67);  // 2.675 is 2.67499999... in binary
  CHECK(python_round(0.125, 2) == 0.12);  // exact tie: to even
  CHECK(python_round(0.375, 2) == 0.38);
  CHECK(python_round(1.005, 2) == 1.0);
}

TEST_CASE("histograms follow np.histogram", "[rules][numeric]") {
  // bins=4 over [0, 8]: [0,2) [2,4) [4,6) [6,8], the last bin closed.
  auto h = histogram(std::vector<double>{0, 1, 2, 5, 8, 8}, 4);
  CHECK(h.counts == std::vector<int64_t>{2, 1, 1, 2});
  CHECK(h.edges == std::vector<double>{0, 2, 4, 6, 8});
  // All values equal: the range widens to [x - 0.5, x + 0.5].
  auto same = histogram(std::vector<double>{3, 3}, 2);
  CHECK(same.edges == std::vector<double>{2.5, 3, 3.5});
  CHECK(same.counts == std::vector<int64_t>{0, 2});
  // Explicit edges drop values outside them (smdebug's 0..98 bins lose 100 %).
  std::vector<double> edges = {0, 2, 4};
  CHECK(histogram_with_edges(std::vector<double>{0, 1.9, 2, 4, 4.1, 100}, edges) == std::vector<int64_t>{2, 2});
}
