#pragma once
/// Racing: when a candidate may stop being timed because it cannot win or tie. Sampling a
/// candidate to the noise target only matters for the ones that could still be the best; one whose
/// median interval lies wholly above the best measured so far by more than the separating noise
/// is "raced" after a handful of samples (issue 29: 34 of 183 GEMM configurations 10-200 % slower
/// than the best took 500-1,237 launches each chasing 0.5 % noise).
///
/// The rule, for a candidate's samples x and the bound B (the smallest upper end of the median
/// intervals of the candidates measured so far, at the same confidence): raced when the sign
/// interval of x (median_interval.hpp) reaches `confidence` (95 % needs 6 samples) and its lower
/// end exceeds B x (1 + separating_noise). Each end is a one-sided 97.5 % bound for 95 %, so the
/// candidate's median is above the best's by more than the noise with at least that confidence,
/// whatever the distribution. The final round (search/finalists.hpp) still decides among the
/// candidates that were not raced.

#include <cstddef>
#include <cstdint>
#include <span>

#include "stages/statistics/median_interval.hpp"

namespace rpl::stages {

/// What a candidate is raced against.
struct race_bound {
  double high_ns = 0.0;          ///< the best so far's interval upper end; <= 0: no bound yet
  double separating_noise = 0.0; ///< relative margin the difference must clear (>= 0)
  double confidence = 0.95;      ///< of both intervals
};

struct race_check {
  bool raced = false;
  median_interval interval; ///< the candidate's, at the bound's confidence
};

/// The fewest samples whose sign interval reaches `confidence` (6 for 0.95, 8 for 0.99).
std::size_t race_min_samples(double confidence);

/// Judges `samples_ns` (non-finite and non-positive values are ignored) against `bound`.
race_check judge_race(std::span<const std::int64_t> samples_ns, const race_bound& bound);

} // namespace rpl::stages
