#pragma once
/// The ratio of two medians (NEW / BASE) with a distribution-free confidence interval, in O(n) per
/// side: Price and Bonett's interval for a ratio of medians (R. M. Price, D. G. Bonett,
/// "Distribution-free confidence intervals for difference and ratio of medians", J. Statistical
/// Computation and Simulation 72(2), 2002). Each side's log-median gets its standard error from
/// the order statistics the sign test pairs with it, [y_(c), y_(n+1-c)] with c = round((n + 1) / 2
/// - sqrt(n)) and the exact binomial coverage of that pair; the two errors add in quadrature and
/// the interval is exp(ln ratio ± z · se). No resampling and no seed: the same samples give the
/// same interval, and a million dispatches cost one nth_element per order statistic.

#include <cstddef>
#include <limits>
#include <span>

namespace rpl::stages::compare {

/// NEW's median over BASE's, and its interval.
struct ratio_interval {
  double base_median_ns = std::numeric_limits<double>::quiet_NaN();
  double new_median_ns = std::numeric_limits<double>::quiet_NaN();
  double ratio = std::numeric_limits<double>::quiet_NaN(); ///< new / base
  double low = 0;                                          ///< 0 when unbounded
  double high = std::numeric_limits<double>::infinity();   ///< infinity when unbounded
  /// False when a side has fewer than `min_samples` positive durations: the interval is then
  /// [0, inf) and the ratio is the medians' alone.
  bool bounded = false;
};

/// Durations per side needed for an interval (fewer leave it unbounded).
inline constexpr std::size_t min_samples = 3;

/// The ratio of the medians of `next` over `base` (durations in ns, any order, non-positive and
/// non-finite values dropped) with its `confidence` (0.5..0.999) interval. Copies each side once.
ratio_interval
median_ratio(std::span<const double> base, std::span<const double> next, double confidence = 0.95);

/// The median of positive `values` and the standard error of its logarithm, from the pair of order
/// statistics [y_(c), y_(n+1-c)] and their exact binomial coverage. Reorders `values`. The error is
/// 0 for fewer than 2 values.
struct log_median {
  double median = std::numeric_limits<double>::quiet_NaN();
  double standard_error = 0;
};
log_median log_median_of(std::span<double> values);

/// The standard normal quantile Φ⁻¹(p), p in (0, 1).
double normal_quantile(double p);

} // namespace rpl::stages::compare
