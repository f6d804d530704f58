#include "stages/statistics/median_interval.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rpl::stages {

namespace {

double median_of_sorted(const std::vector<double>& sorted) {
  const std::size_t middle = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2.0;
}

struct sign_rank {
  std::size_t k = 1;     ///< 1-based rank of the lower bound; the upper is n + 1 - k
  double coverage = 0.0; ///< 1 - 2 P(Bin(n, 1/2) <= k - 1)
};

// Walks k up while the interval [x_(k), x_(n+1-k)] still covers `confidence`. The binomial
// probabilities go through logarithms: 2^-n underflows a double from n = 1075 on.
sign_rank choose_sign_rank(std::size_t n, double confidence) {
  const double count = static_cast<double>(n);
  double log_pmf = -count * std::log(2.0); // P(B = 0)
  double cdf = std::exp(log_pmf);          // P(B <= k - 1), for k = 1
  sign_rank chosen{1, 1.0 - 2.0 * cdf};
  for (std::size_t k = 2; 2 * k <= n + 1; ++k) {
    const double i = static_cast<double>(k - 1); // P(B = i) from P(B = i - 1)
    log_pmf += std::log((count - i + 1.0) / i);
    cdf += std::exp(log_pmf);
    const double coverage = 1.0 - 2.0 * cdf;
    if (coverage < confidence) {
      break;
    }
    chosen = {k, coverage};
  }
  return chosen;
}

} // namespace

median_interval estimate_median(std::span<const double> values, double confidence) {
  std::vector<double> sorted;
  sorted.reserve(values.size());
  for (const double value : values) {
    if (std::isfinite(value)) {
      sorted.push_back(value);
    }
  }
  median_interval result;
  result.n = sorted.size();
  if (sorted.empty()) {
    return result;
  }
  std::sort(sorted.begin(), sorted.end());
  const sign_rank rank = choose_sign_rank(sorted.size(), confidence);
  result.median = median_of_sorted(sorted);
  result.low = sorted[rank.k - 1];
  result.high = sorted[sorted.size() - rank.k];
  result.confidence = rank.coverage;
  return result;
}

} // namespace rpl::stages
