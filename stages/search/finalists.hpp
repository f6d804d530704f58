#pragma once
/// The honest winner: which candidates of a sweep go to the final round, and, from that round's
/// interleaved samples (A B C A B C ... on one lane), which finalist wins and which it cannot be
/// told apart from.
///
/// Method: each finalist is paired, round by round, with the best-median one: q_r = x_r / w_r - 1.
/// A drift common to a round (clocks, temperature, other work) divides out of x_r / w_r, which the
/// finalists' own spreads cannot do. The estimate is the median of q and its interval the sign
/// test's: the order statistics [q_(k), q_(n+1-k)], k the largest with 1 - 2 P(Bin(n, 1/2) < k)
/// >= confidence (Conover, Practical Nonparametric Statistics, 3rd ed., 1999, ch. 3, the
/// confidence interval for a quantile; Le Boudec, Performance Evaluation of Computer and
/// Communication Systems, 2010, ch. 2, the confidence interval for the median). Chosen over a
/// bootstrap, which needs a random stream that is the same on every standard library and is
/// poor for medians of few rounds, and over Wilcoxon's signed-rank interval, which assumes the
/// differences symmetric: GPU timings have a long right tail (a preempted round), and the sign
/// interval's coverage is exact for any continuous distribution, with one outlying round moving it
/// by one order statistic at most.

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "stages/statistics/median_interval.hpp"

namespace rpl::stages {

/// One candidate's samples. In a final round samples_ns[r] is its sample of round r, and a value
/// that is not a finite positive number marks a round it missed; in a sweep, the order is free.
struct keyed_samples {
  std::string key;
  std::vector<double> samples_ns;
};

/// Tuning of the finalist choice and of the final verdict.
struct finalist_config {
  double confidence = 0.95;      ///< of every interval; separations are one-sided, at 97.5 %
  double target_noise = 0.005;   ///< sampling_target::max_noise: no smaller difference separates
  std::size_t max_finalists = 5; ///< the final round's size
};

/// One finalist against the winner.
struct finalist_comparison {
  std::string key;
  median_interval time_ns;             ///< its own valid samples
  median_interval relative_difference; ///< paired rounds: median of x_r / winner_r - 1
  /// Spread of one round's relative difference: 1.4826 x the median absolute deviation of q
  /// (the standard deviation for normal data, robust to outlying rounds).
  double paired_noise = 0.0;
  double separating_noise = 0.0; ///< max(target_noise, paired_noise): what a difference must clear
  bool tied = false;             ///< the winner is not shown faster beyond separating_noise
};

/// The final round's verdict.
struct final_decision {
  std::string winner;                         ///< the best median; "" when nobody has a sample
  std::vector<std::string> tie_set;           ///< winner first, then by median
  std::vector<finalist_comparison> finalists; ///< by median, winner first; sampleless ones last
};

/// Decides the final round. The winner is the finalist with the lowest median (then the lowest
/// key). Another finalist is separated from it only when its relative difference interval, at
/// `config.confidence` reached, lies wholly above separating_noise; otherwise it is tied: inside
/// the noise, too few paired rounds, or (paired) even faster than the winner, which the winner
/// then cannot claim to beat. A finalist without a valid sample is neither winner nor tied.
/// Deterministic: the same input gives the same decision.
final_decision decide_winner(std::span<const keyed_samples> finalists,
                             const finalist_config& config);

/// The keys to send to the final round, by median (then key): first every candidate whose median
/// interval overlaps the best one's (the sweep cannot tell them from the best), then the next
/// best medians (sweep samples are taken at different times, so a drift can separate them
/// falsely), up to max_finalists. Candidates without a valid sample are never chosen.
std::vector<std::string> choose_finalists(std::span<const keyed_samples> sweep,
                                          const finalist_config& config);

} // namespace rpl::stages
