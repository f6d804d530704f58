#include "stages/optimize/paired_verdict.hpp"

#include <cmath>
#include <cstdio>

namespace rpl::stages::optimize {

namespace {

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f", fraction * 100.0);
  return text;
}

} // namespace

const char* to_string(paired_outcome outcome) {
  switch (outcome) {
  case paired_outcome::faster: return "faster";
  case paired_outcome::within_noise: return "within_noise";
  case paired_outcome::slower: return "slower";
  case paired_outcome::not_measured: return "not_measured";
  }
  return "unknown";
}

paired_verdict judge_pair(const std::vector<double>& incumbent_ns,
                          const std::vector<double>& candidate_ns,
                          const finalist_config& config) {
  paired_verdict verdict;
  const std::vector<keyed_samples> pair = {{"incumbent", incumbent_ns},
                                           {"candidate", candidate_ns}};
  const final_decision decision = decide_winner(pair, config);
  const finalist_comparison* incumbent = nullptr;
  const finalist_comparison* candidate = nullptr;
  for (const auto& f : decision.finalists) {
    (f.key == "incumbent" ? incumbent : candidate) = &f;
  }
  if (incumbent == nullptr || candidate == nullptr || decision.winner.empty() ||
      incumbent->time_ns.n == 0 || candidate->time_ns.n == 0) {
    verdict.summary = "not measured: a side has no valid sample";
    return verdict;
  }
  verdict.incumbent_median_ns = incumbent->time_ns.median;
  verdict.candidate_median_ns = candidate->time_ns.median;
  // The comparison of the loser against the winner, turned into candidate / incumbent - 1.
  const bool candidate_won = decision.winner == "candidate";
  const finalist_comparison& loser = candidate_won ? *incumbent : *candidate;
  verdict.separating_noise = loser.separating_noise;
  verdict.rounds = loser.relative_difference.n;
  if (candidate_won) {
    // loser = incumbent: q = incumbent / candidate - 1; candidate / incumbent - 1 = 1/(1+q) - 1.
    const auto flip = [](double q) { return 1.0 / (1.0 + q) - 1.0; };
    verdict.relative_change = loser.relative_difference;
    verdict.relative_change.median = flip(loser.relative_difference.median);
    verdict.relative_change.low = flip(loser.relative_difference.high);
    verdict.relative_change.high = flip(loser.relative_difference.low);
    verdict.outcome = loser.tied ? paired_outcome::within_noise : paired_outcome::faster;
  } else {
    verdict.relative_change = loser.relative_difference;
    verdict.outcome = loser.tied ? paired_outcome::within_noise : paired_outcome::slower;
  }
  const auto& r = verdict.relative_change;
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3fx",
                verdict.candidate_median_ns > 0.0
                    ? verdict.incumbent_median_ns / verdict.candidate_median_ns
                    : 0.0);
  verdict.summary = std::string(to_string(verdict.outcome)) + ": " + ratio +
                    " (candidate/incumbent - 1 = " + percent(r.median) + " %, interval [" +
                    percent(r.low) + ", " + percent(r.high) + "] %, separating noise " +
                    percent(verdict.separating_noise).substr(1) + " %, " +
                    std::to_string(verdict.rounds) + " paired rounds)";
  return verdict;
}

} // namespace rpl::stages::optimize
