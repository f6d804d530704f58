#include "stages/statistics/race_rule.hpp"

#include <vector>

namespace rpl::stages {

std::size_t race_min_samples(double confidence) {
  // 1 - 2^(1-n) >= confidence: the whole range's coverage, which is what k = 1 gives.
  std::size_t n = 2;
  double tail = 0.5; // 2^(1-n)
  while (1.0 - tail < confidence && n < 64) {
    ++n;
    tail /= 2.0;
  }
  return n;
}

race_check judge_race(std::span<const std::int64_t> samples_ns, const race_bound& bound) {
  std::vector<double> values;
  values.reserve(samples_ns.size());
  for (const std::int64_t ns : samples_ns) {
    if (ns > 0)
      values.push_back(static_cast<double>(ns));
  }
  race_check check;
  check.interval = estimate_median(values, bound.confidence);
  check.raced = bound.high_ns > 0.0 && check.interval.n > 0 &&
                check.interval.confidence >= bound.confidence &&
                check.interval.low > bound.high_ns * (1.0 + bound.separating_noise);
  return check;
}

} // namespace rpl::stages
