#pragma once
/// The median of a set of samples and its distribution-free confidence interval: the sign test's
/// order statistics [x_(k), x_(n+1-k)], k the largest with 1 - 2 P(Bin(n, 1/2) < k) >= the
/// confidence asked for (Conover, Practical Nonparametric Statistics, 3rd ed., 1999, ch. 3, the
/// confidence interval for a quantile; Le Boudec, Performance Evaluation of Computer and
/// Communication Systems, 2010, ch. 2). Exact for any continuous distribution, so a long right
/// tail (a preempted launch) moves it by one order statistic at most. Used by the final round
/// (search/finalists.hpp), the optimizer's paired verdict and the lanes' racing (race_rule.hpp).

#include <cstddef>
#include <limits>
#include <span>

namespace rpl::stages {

/// A median and its distribution-free confidence interval.
struct median_interval {
  std::size_t n = 0; ///< values it is computed from
  double median = std::numeric_limits<double>::quiet_NaN();
  double low = std::numeric_limits<double>::quiet_NaN();
  double high = std::numeric_limits<double>::quiet_NaN();
  /// Exact coverage of [low, high] for the median of any continuous distribution; below the
  /// level asked for when n is too small (95 % needs n >= 6), 0 for n <= 1.
  double confidence = 0.0;
};

/// The median of the finite `values` (any order; the mean of the middle two for an even count)
/// and the sign test's interval [x_(k), x_(n+1-k)], k the largest whose coverage is >=
/// `confidence`, or k = 1 (the whole range) when none is. All NaN for no finite value.
median_interval estimate_median(std::span<const double> values, double confidence);

} // namespace rpl::stages
