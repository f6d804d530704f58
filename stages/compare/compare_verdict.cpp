#include "stages/compare/compare_verdict.hpp"

#include <algorithm>
#include <cmath>

namespace rpl::stages::compare {

std::string_view verdict_name(kernel_verdict verdict) {
  switch (verdict) {
  case kernel_verdict::same: return "same";
  case kernel_verdict::faster: return "faster";
  case kernel_verdict::slower: return "slower";
  case kernel_verdict::ambiguous: return "ambiguous";
  case kernel_verdict::added: return "new";
  case kernel_verdict::removed: return "gone";
  }
  return "ambiguous";
}

kernel_verdict judge(const ratio_interval& interval, double noise) {
  if (!interval.bounded || !std::isfinite(interval.ratio))
    return kernel_verdict::ambiguous;
  const double t = std::max(0.0, noise);
  if (interval.low >= 1.0 - t && interval.high <= 1.0 + t)
    return kernel_verdict::same;
  if (interval.low > 1.0 && interval.ratio > 1.0 + t)
    return kernel_verdict::slower;
  if (interval.high < 1.0 && interval.ratio < 1.0 - t)
    return kernel_verdict::faster;
  return kernel_verdict::ambiguous;
}

double run_noise(const std::vector<double>& run_medians_ns) {
  if (run_medians_ns.size() < 2)
    return 0.0;
  std::vector<double> sorted = run_medians_ns;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double middle = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  if (!(middle > 0))
    return 0.0;
  double worst = 0;
  for (const double m : sorted)
    worst = std::max(worst, std::abs(m - middle) / middle);
  return worst;
}

} // namespace rpl::stages::compare
