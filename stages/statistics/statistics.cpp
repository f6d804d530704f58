#include "stages/statistics/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rpl::stages {

const char* to_string(stability_class value) {
  switch (value) {
  case stability_class::stable: return "stable";
  case stability_class::moderate: return "moderate";
  case stability_class::unstable: return "unstable";
  }
  return "unknown";
}

stability_class classify_cv(double cv) {
  if (cv <= 0.05) {
    return stability_class::stable;
  }
  if (cv <= 0.10) {
    return stability_class::moderate;
  }
  return stability_class::unstable; // also NaN, which fails both comparisons
}

sample_stats summarize(std::span<const std::int64_t> samples) {
  std::vector<std::int64_t> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return summarize_sorted(sorted);
}

sample_stats summarize_sorted(std::span<const std::int64_t> sorted) {
  sample_stats stats;
  stats.n = sorted.size();
  if (sorted.empty()) {
    return stats;
  }
  const std::size_t middle = sorted.size() / 2;
  // Averaging in double avoids int64 overflow when adding the two middle samples.
  stats.median =
      sorted.size() % 2 == 1
          ? static_cast<double>(sorted[middle])
          : (static_cast<double>(sorted[middle - 1]) + static_cast<double>(sorted[middle])) / 2.0;
  stats.min = static_cast<double>(sorted.front());
  stats.max = static_cast<double>(sorted.back());

  double sum = 0.0;
  for (const std::int64_t sample : sorted) {
    sum += static_cast<double>(sample);
  }
  stats.mean = sum / static_cast<double>(stats.n);
  if (stats.n >= 2) {
    // Two passes (mean first, then squared deviations) keep precision where the one-pass sum of
    // squares would cancel catastrophically for large, close timings.
    double squares = 0.0;
    for (const std::int64_t sample : sorted) {
      const double deviation = static_cast<double>(sample) - stats.mean;
      squares += deviation * deviation;
    }
    stats.stddev = std::sqrt(squares / static_cast<double>(stats.n - 1));
  }
  stats.cv = stats.mean == 0.0 ? 0.0 : stats.stddev / stats.mean;
  stats.stability = classify_cv(stats.cv);
  return stats;
}

} // namespace rpl::stages
