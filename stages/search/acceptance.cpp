#include "stages/search/acceptance.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rpl::stages {

namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

} // namespace

std::string format_duration_ns(double ns) {
  const double magnitude = std::fabs(ns);
  if (magnitude >= 1e9) {
    return format("%.2f s", ns / 1e9);
  }
  if (magnitude >= 1e6) {
    return format("%.2f ms", ns / 1e6);
  }
  if (magnitude >= 1e3) {
    return format("%.2f µs", ns / 1e3);
  }
  return format("%.0f ns", ns);
}

messages::verdict judge(const std::string& candidate_key,
                        const messages::measure_result& result,
                        const sample_stats& stats,
                        const std::optional<incumbent>& best,
                        const acceptance_config& config) {
  messages::verdict verdict;
  verdict.candidate_key = candidate_key;
  verdict.median_ns = stats.median;
  verdict.best_key = best ? best->key : std::string();

  if (result.status != messages::measure_status::ok || stats.n == 0) {
    verdict.decision = messages::verdict_kind::invalid;
    if (!result.reason.empty()) {
      verdict.reason = result.reason;
    } else if (result.status != messages::measure_status::ok) {
      verdict.reason = messages::to_string(result.status);
    } else {
      verdict.reason = "no timed samples";
    }
    return verdict;
  }
  if (!best) {
    verdict.decision = messages::verdict_kind::faster;
    verdict.reason = "first valid candidate";
    verdict.best_key = candidate_key;
    return verdict;
  }

  const double best_median = best->stats.median;
  // A zero incumbent median cannot come from real timings; avoid dividing by it all the same.
  const double rel = best_median > 0.0 ? (stats.median - best_median) / best_median : 0.0;
  const double noise = std::max({config.min_relative_noise, best->stats.cv, stats.cv});
  verdict.relative_change = rel;
  verdict.reason = "median " + format_duration_ns(stats.median) + " vs " +
                   format_duration_ns(best_median) + " (" + format("%+.1f%%", rel * 100.0) +
                   "), noise band ±" + format("%.1f%%", noise * 100.0);

  if (std::fabs(rel) <= noise) {
    const bool candidate_unstable = stats.stability == stability_class::unstable;
    const bool best_unstable = best->stats.stability == stability_class::unstable;
    if (candidate_unstable || best_unstable) {
      verdict.decision = messages::verdict_kind::ambiguous;
      verdict.reason += candidate_unstable && best_unstable ? "; both are unstable"
                        : candidate_unstable                ? "; the candidate is unstable"
                                                            : "; the incumbent is unstable";
      verdict.reason +=
          format(" (cv %.1f%%", stats.cv * 100.0) + format(" vs %.1f%%)", best->stats.cv * 100.0);
    } else {
      verdict.decision = messages::verdict_kind::same;
    }
  } else if (rel < -noise) {
    verdict.decision = messages::verdict_kind::faster;
    verdict.best_key = candidate_key;
  } else {
    verdict.decision = messages::verdict_kind::slower;
  }
  return verdict;
}

} // namespace rpl::stages
