#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/search/acceptance.hpp"

namespace rpl::stages {
namespace {

sample_stats stats_with(double median, double cv) {
  sample_stats stats;
  stats.n = 5;
  stats.median = median;
  stats.mean = median;
  stats.cv = cv;
  stats.stddev = cv * median;
  stats.stability = classify_cv(cv);
  return stats;
}

messages::measure_result ok_result() {
  messages::measure_result result;
  result.status = messages::measure_status::ok;
  result.samples_ns = {1, 2, 3, 4, 5};
  return result;
}

const acceptance_config defaults{};

TEST(stages_acceptance, failed_measurement_is_invalid_with_its_reason) {
  messages::measure_result result;
  result.status = messages::measure_status::crashed;
  result.reason = "killed by SIGSEGV";
  const messages::verdict v =
      judge("cand", result, sample_stats{}, incumbent{"best", stats_with(1e6, 0.01)}, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::invalid);
  EXPECT_EQ(v.reason, "killed by SIGSEGV");
  EXPECT_EQ(v.candidate_key, "cand");
  EXPECT_EQ(v.best_key, "best");
}

TEST(stages_acceptance, failed_measurement_without_reason_uses_the_status_name) {
  messages::measure_result result;
  result.status = messages::measure_status::timed_out;
  const messages::verdict v = judge("cand", result, sample_stats{}, std::nullopt, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::invalid);
  EXPECT_EQ(v.reason, messages::to_string(messages::measure_status::timed_out));
  EXPECT_EQ(v.best_key, "");
}

TEST(stages_acceptance, ok_status_without_samples_is_invalid) {
  messages::measure_result result;
  result.status = messages::measure_status::ok;
  const messages::verdict v = judge("cand", result, sample_stats{}, std::nullopt, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::invalid);
  EXPECT_FALSE(v.reason.empty());
}

TEST(stages_acceptance, first_valid_candidate_is_faster_and_becomes_best) {
  const messages::verdict v =
      judge("cand", ok_result(), stats_with(2e6, 0.2), std::nullopt, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::faster);
  EXPECT_EQ(v.reason, "first valid candidate");
  EXPECT_EQ(v.best_key, "cand");
  EXPECT_DOUBLE_EQ(v.median_ns, 2e6);
  EXPECT_DOUBLE_EQ(v.relative_change, 0.0);
}

TEST(stages_acceptance, clearly_lower_median_is_faster_and_states_the_numbers) {
  const messages::verdict v = judge("cand", ok_result(), stats_with(12.31e6, 0.012),
                                    incumbent{"best", stats_with(13.02e6, 0.01)}, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::faster);
  EXPECT_EQ(v.best_key, "cand");
  EXPECT_EQ(v.reason, "median 12.31 ms vs 13.02 ms (-5.5%), noise band ±1.2%");
  EXPECT_NEAR(v.relative_change, (12.31 - 13.02) / 13.02, 1e-12);
  EXPECT_DOUBLE_EQ(v.median_ns, 12.31e6);
}

TEST(stages_acceptance, clearly_higher_median_is_slower_and_keeps_the_incumbent) {
  const messages::verdict v = judge("cand", ok_result(), stats_with(1100.0, 0.01),
                                    incumbent{"best", stats_with(1000.0, 0.01)}, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::slower);
  EXPECT_EQ(v.best_key, "best");
  EXPECT_NEAR(v.relative_change, 0.1, 1e-12);
  EXPECT_EQ(v.reason, "median 1.10 µs vs 1.00 µs (+10.0%), noise band ±1.0%");
}

TEST(stages_acceptance, difference_under_the_minimum_noise_is_same) {
  const messages::verdict v = judge("cand", ok_result(), stats_with(995.0, 0.001),
                                    incumbent{"best", stats_with(1000.0, 0.001)}, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::same);
  EXPECT_EQ(v.best_key, "best");
}

TEST(stages_acceptance, noise_band_widens_to_the_larger_cv) {
  // 6% faster, but the incumbent's cv is 8%: inside the band, and neither side is unstable.
  const messages::verdict v = judge("cand", ok_result(), stats_with(940.0, 0.02),
                                    incumbent{"best", stats_with(1000.0, 0.08)}, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::same);
  EXPECT_NE(v.reason.find("noise band ±8.0%"), std::string::npos) << v.reason;
}

TEST(stages_acceptance, difference_inside_the_band_with_an_unstable_side_is_ambiguous) {
  const messages::verdict v = judge("cand", ok_result(), stats_with(900.0, 0.15),
                                    incumbent{"best", stats_with(1000.0, 0.01)}, defaults);
  EXPECT_EQ(v.decision, messages::verdict_kind::ambiguous);
  EXPECT_EQ(v.best_key, "best");
  EXPECT_NE(v.reason.find("candidate is unstable"), std::string::npos) << v.reason;
}

TEST(stages_acceptance, min_relative_noise_is_configurable) {
  const acceptance_config strict{0.001};
  const messages::verdict v = judge("cand", ok_result(), stats_with(995.0, 0.0001),
                                    incumbent{"best", stats_with(1000.0, 0.0001)}, strict);
  EXPECT_EQ(v.decision, messages::verdict_kind::faster);
}

TEST(stages_acceptance, durations_pick_a_readable_unit) {
  EXPECT_EQ(format_duration_ns(850.0), "850 ns");
  EXPECT_EQ(format_duration_ns(1500.0), "1.50 µs");
  EXPECT_EQ(format_duration_ns(12.31e6), "12.31 ms");
  EXPECT_EQ(format_duration_ns(2.5e9), "2.50 s");
}

} // namespace
} // namespace rpl::stages
