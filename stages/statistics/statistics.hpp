#pragma once
/// Summary statistics of one candidate's timed runs, and how stable they were.

#include <cstddef>
#include <cstdint>
#include <span>

namespace rpl::stages {

/// How noisy a set of samples is, judged by its coefficient of variation.
enum class stability_class : std::uint8_t { stable = 0, moderate = 1, unstable = 2 };

/// "stable", "moderate" or "unstable".
const char* to_string(stability_class value);

/// cv <= 0.05 stable, cv <= 0.10 moderate, otherwise (NaN included) unstable.
stability_class classify_cv(double cv);

/// Summary of a sample set; all zero (and stable) for an empty one.
struct sample_stats {
  std::size_t n = 0;
  double median = 0;
  double mean = 0;
  double stddev = 0; ///< sample standard deviation (divides by n - 1); 0 when n < 2
  double cv = 0;     ///< stddev / mean; 0 when mean == 0
  double min = 0;
  double max = 0;
  stability_class stability = stability_class::stable;
};

/// Summarizes `samples` (nanoseconds, any order). The median of an even count is the mean of the
/// middle two.
sample_stats summarize(std::span<const std::int64_t> samples);
/// summarize() of samples already in ascending order: the same figures, without its copy and sort.
sample_stats summarize_sorted(std::span<const std::int64_t> sorted);

} // namespace rpl::stages
