#include "stages/search/finalists.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>
#include <utility>

namespace rpl::stages {

namespace {

// 1 / Phi^-1(3/4): scales the median absolute deviation to the standard deviation of normal data.
constexpr double mad_to_stdev = 1.4826;

bool is_valid_time(double sample_ns) {
  return std::isfinite(sample_ns) && sample_ns > 0.0;
}

std::vector<double> valid_times(std::span<const double> samples_ns) {
  std::vector<double> valid;
  valid.reserve(samples_ns.size());
  for (const double sample_ns : samples_ns) {
    if (is_valid_time(sample_ns)) {
      valid.push_back(sample_ns);
    }
  }
  return valid;
}

double median_of_sorted(const std::vector<double>& sorted) {
  const std::size_t middle = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2.0;
}

// 1.4826 x median |q - median(q)|; 0 for no value.
double robust_spread(const std::vector<double>& values, double center) {
  if (values.empty()) {
    return 0.0;
  }
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (const double value : values) {
    deviations.push_back(std::fabs(value - center));
  }
  std::sort(deviations.begin(), deviations.end());
  return mad_to_stdev * median_of_sorted(deviations);
}

// Per-round relative differences of `samples_ns` to the winner's, over the rounds both have.
std::vector<double> paired_differences(std::span<const double> samples_ns,
                                       std::span<const double> winner_ns) {
  std::vector<double> differences;
  const std::size_t rounds = std::min(samples_ns.size(), winner_ns.size());
  differences.reserve(rounds);
  for (std::size_t round = 0; round < rounds; ++round) {
    if (is_valid_time(samples_ns[round]) && is_valid_time(winner_ns[round])) {
      differences.push_back(samples_ns[round] / winner_ns[round] - 1.0);
    }
  }
  return differences;
}

void compare_with_winner(finalist_comparison& row,
                         std::span<const double> samples_ns,
                         std::span<const double> winner_ns,
                         const finalist_config& config) {
  const std::vector<double> differences = paired_differences(samples_ns, winner_ns);
  row.relative_difference = estimate_median(differences, config.confidence);
  row.paired_noise = robust_spread(differences, row.relative_difference.median);
  row.separating_noise = std::max(config.target_noise, row.paired_noise);
  const bool separated = row.relative_difference.n > 0 &&
                         row.relative_difference.confidence >= config.confidence &&
                         row.relative_difference.low > row.separating_noise;
  row.tied = !separated;
}

// Indices into `rows`, sampleless rows last, then by median, key and input position.
template <class Row> std::vector<std::size_t> median_order(const std::vector<Row>& rows) {
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  const auto rank = [&rows](std::size_t i) {
    const median_interval& time = rows[i].time_ns;
    return std::make_tuple(time.n == 0, time.n == 0 ? 0.0 : time.median, std::cref(rows[i].key), i);
  };
  std::sort(order.begin(), order.end(),
            [&rank](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
  return order;
}

bool overlaps(const median_interval& a, const median_interval& b) {
  return a.low <= b.high && b.low <= a.high;
}

} // namespace

final_decision decide_winner(std::span<const keyed_samples> finalists,
                             const finalist_config& config) {
  std::vector<finalist_comparison> rows(finalists.size());
  for (std::size_t i = 0; i < finalists.size(); ++i) {
    rows[i].key = finalists[i].key;
    rows[i].time_ns = estimate_median(valid_times(finalists[i].samples_ns), config.confidence);
  }
  const std::vector<std::size_t> order = median_order(rows);
  final_decision decision;
  if (order.empty() || rows[order.front()].time_ns.n == 0) {
    for (const std::size_t i : order) {
      decision.finalists.push_back(rows[i]);
    }
    return decision;
  }
  const std::span<const double> winner_ns = finalists[order.front()].samples_ns;
  decision.winner = rows[order.front()].key;
  for (const std::size_t i : order) {
    finalist_comparison& row = rows[i];
    if (row.time_ns.n > 0) {
      compare_with_winner(row, finalists[i].samples_ns, winner_ns, config);
    }
    if (row.tied) {
      decision.tie_set.push_back(row.key);
    }
    decision.finalists.push_back(std::move(row));
  }
  return decision;
}

std::vector<std::string> choose_finalists(std::span<const keyed_samples> sweep,
                                          const finalist_config& config) {
  struct row {
    std::string key;
    median_interval time_ns;
  };
  std::vector<row> rows(sweep.size());
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    rows[i] = {sweep[i].key, estimate_median(valid_times(sweep[i].samples_ns), config.confidence)};
  }
  std::vector<std::size_t> order = median_order(rows);
  std::erase_if(order, [&rows](std::size_t i) { return rows[i].time_ns.n == 0; });
  if (order.empty()) {
    return {};
  }
  const median_interval& best = rows[order.front()].time_ns;
  // Stable partition keeps median order inside each group: overlapping ones first.
  std::stable_partition(order.begin(), order.end(),
                        [&](std::size_t i) { return overlaps(rows[i].time_ns, best); });
  order.resize(std::min(order.size(), config.max_finalists));
  std::sort(order.begin(), order.end(), [&rows](std::size_t a, std::size_t b) {
    return std::tie(rows[a].time_ns.median, rows[a].key, a) <
           std::tie(rows[b].time_ns.median, rows[b].key, b);
  });
  std::vector<std::string> keys;
  keys.reserve(order.size());
  for (const std::size_t i : order) {
    keys.push_back(rows[i].key);
  }
  return keys;
}

} // namespace rpl::stages
