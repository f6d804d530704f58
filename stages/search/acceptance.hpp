#pragma once
/// The acceptance rule: is a measured candidate faster than the incumbent, beyond the noise?

#include <optional>
#include <string>

#include "messages/wire.hpp"
#include "stages/statistics/statistics.hpp"

namespace rpl::stages {

/// Tuning of the acceptance rule.
struct acceptance_config {
  double min_relative_noise = 0.01; ///< differences under 1% are never wins
};

/// The best candidate so far.
struct incumbent {
  std::string key;
  sample_stats stats;
};

/// Judges one measured candidate against the incumbent:
///   - a failed measurement or no samples: invalid (reason from the result);
///   - no incumbent: faster ("first valid candidate");
///   - otherwise rel = (candidate median - incumbent median) / incumbent median and the noise band
///     is max(min_relative_noise, incumbent cv, candidate cv): inside the band it is `same`, or
///     `ambiguous` when either side is unstable; below it `faster`; above it `slower`.
/// best_key is the incumbent after the verdict: the candidate when it is faster.
messages::verdict judge(const std::string& candidate_key,
                        const messages::measure_result& result,
                        const sample_stats& stats,
                        const std::optional<incumbent>& best,
                        const acceptance_config& config);

/// A duration in the unit that keeps it readable, e.g. "12.31 ms", "850.00 ns".
std::string format_duration_ns(double ns);

} // namespace rpl::stages
