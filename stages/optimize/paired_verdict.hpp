#pragma once
/// Accept only what is measured: the incumbent (the original, or the best change accepted so far)
/// and a candidate re-measured interleaved on one device, round after round (the final round's
/// paired comparison, stages/search/finalists.hpp), and the candidate accepted only when it is
/// faster beyond the separating noise at 95 % (one-sided 97.5 %) confidence.

#include <string>
#include <vector>

#include "stages/search/finalists.hpp"

namespace rpl::stages::optimize {

enum class paired_outcome { faster, within_noise, slower, not_measured };

struct paired_verdict {
  paired_outcome outcome = paired_outcome::not_measured;
  double incumbent_median_ns = 0.0;
  double candidate_median_ns = 0.0;
  /// Median of candidate_r / incumbent_r - 1 over the rounds, with its sign-test interval.
  median_interval relative_change;
  double separating_noise = 0.0;
  std::size_t rounds = 0;
  std::string summary; ///< "1.083x faster (relative change -7.7 %, 95 % interval [-8.1, -7.2] %)"
};

/// Decides from per-round samples (index r of both vectors is round r; a non-finite or
/// non-positive value marks a missed round).
paired_verdict judge_pair(const std::vector<double>& incumbent_ns,
                          const std::vector<double>& candidate_ns,
                          const finalist_config& config);

const char* to_string(paired_outcome outcome);

} // namespace rpl::stages::optimize
