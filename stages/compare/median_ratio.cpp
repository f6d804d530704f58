#include "stages/compare/median_ratio.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rpl::stages::compare {

namespace {

/// P(Bin(n, 1/2) <= k): exact up to a few thousand trials, the normal approximation with a
/// continuity correction above (where its error is far below what a 95 % interval notices).
double binomial_half_cdf(std::size_t n, std::size_t k) {
  if (k >= n)
    return 1.0;
  if (n > 2000) {
    const double mean = static_cast<double>(n) / 2.0;
    const double sd = std::sqrt(static_cast<double>(n)) / 2.0;
    return 0.5 * std::erfc(-((static_cast<double>(k) + 0.5 - mean) / sd) / std::sqrt(2.0));
  }
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  const double log_n_factorial = std::lgamma(static_cast<double>(n) + 1.0);
  double sum = 0;
  for (std::size_t i = 0; i <= k; ++i)
    sum += std::exp(log_n_factorial - std::lgamma(static_cast<double>(i) + 1.0) -
                    std::lgamma(static_cast<double>(n - i) + 1.0) + log_half_n);
  return std::min(1.0, sum);
}

/// The k-th smallest (0-based) of `values`, reordering them.
double nth(std::span<double> values, std::size_t k) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

std::vector<double> positive(std::span<const double> values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (const double v : values)
    if (std::isfinite(v) && v > 0)
      out.push_back(v);
  return out;
}

} // namespace

double normal_quantile(double p) {
  // Bisection on the CDF: 80 halvings of [-40, 40] reach double precision; called a few times.
  double lo = -40, hi = 40;
  for (int i = 0; i < 80; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

log_median log_median_of(std::span<double> values) {
  log_median out;
  const std::size_t n = values.size();
  if (n == 0)
    return out;
  // Order statistics first from the outside in: nth_element leaves everything above k above it.
  const double upper_middle = nth(values, n / 2);
  out.median = n % 2 == 1
                   ? upper_middle
                   : (upper_middle +
                      *std::max_element(values.begin(),
                                        values.begin() + static_cast<std::ptrdiff_t>(n / 2))) /
                         2.0;
  if (n < 2)
    return out;
  // c (1-based) = round((n + 1) / 2 - sqrt(n)), at least 1.
  const double c_real = (static_cast<double>(n) + 1.0) / 2.0 - std::sqrt(static_cast<double>(n));
  const std::size_t c = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(c_real)));
  const double low = nth(values, c - 1);
  const double high = nth(values, n - c);
  // The pair's coverage is 1 - 2 P(Bin(n, 1/2) <= c - 1); its z the matching normal quantile.
  const double tail = binomial_half_cdf(n, c - 1);
  const double z = tail > 0 && tail < 0.5 ? normal_quantile(1.0 - tail) : 0.0;
  out.standard_error = z > 0 ? (std::log(high) - std::log(low)) / (2.0 * z) : 0.0;
  return out;
}

ratio_interval
median_ratio(std::span<const double> base, std::span<const double> next, double confidence) {
  ratio_interval out;
  std::vector<double> b = positive(base), x = positive(next);
  if (b.empty() || x.empty())
    return out;
  const log_median lb = log_median_of(b);
  const log_median lx = log_median_of(x);
  out.base_median_ns = lb.median;
  out.new_median_ns = lx.median;
  out.ratio = lx.median / lb.median;
  if (b.size() < min_samples || x.size() < min_samples)
    return out;
  const double z = normal_quantile(1.0 - (1.0 - std::clamp(confidence, 0.5, 0.999)) / 2.0);
  const double se = std::hypot(lb.standard_error, lx.standard_error);
  out.low = out.ratio * std::exp(-z * se);
  out.high = out.ratio * std::exp(z * se);
  out.bounded = true;
  return out;
}

} // namespace rpl::stages::compare
