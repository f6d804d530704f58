#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/statistics/sampling_criterion.hpp"

namespace rpl::stages {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// 1 ms +- 0.1 %, alternating: noise 0.1 %, and every even count sums to exactly count x 1 ms.
double alternating_ns(std::size_t index) {
  return index % 2 == 0 ? 1'001'000.0 : 999'000.0;
}

// A kernel slowing down by 0.2 % a sample: the noise grows and never settles.
double drifting_ns(std::size_t index) {
  return 1e6 * (1.0 + 0.002 * static_cast<double>(index));
}

// Feeds samples until the state is not continue_sampling; returns how many were fed (0: never).
template <class Samples>
std::size_t samples_until_stop(sampling_criterion& criterion,
                               Samples samples,
                               std::size_t limit,
                               double wall_s_per_sample = 0.0) {
  for (std::size_t i = 0; i < limit; ++i) {
    const double elapsed_s = wall_s_per_sample * static_cast<double>(i + 1);
    if (criterion.add(samples(i), elapsed_s) != sampling_state::continue_sampling) {
      return i + 1;
    }
  }
  return 0;
}

TEST(stages_sampling_criterion, defaults_are_nvbench_stdrel) {
  const sampling_target target;
  EXPECT_DOUBLE_EQ(target.max_noise, 0.005);
  EXPECT_EQ(target.min_samples, 10u);
  EXPECT_DOUBLE_EQ(target.min_time_s, 0.5);
  EXPECT_DOUBLE_EQ(target.max_time_s, 15.0);
  EXPECT_EQ(check_sampling_target(target), "");
}

TEST(stages_sampling_criterion, low_noise_converges_on_the_sample_that_passes_min_time) {
  sampling_criterion criterion; // min_time 0.5 s: 500 samples of 1 ms are not more than it
  EXPECT_EQ(samples_until_stop(criterion, alternating_ns, 10'000, 0.001), 501u);
  EXPECT_EQ(criterion.state(), sampling_state::converged);
  EXPECT_EQ(criterion.sample_count(), 501u);
  EXPECT_DOUBLE_EQ(criterion.total_time_ns(), 501'001'000.0);
  EXPECT_NEAR(criterion.noise(), 0.001, 0.000'01);
  EXPECT_FALSE(is_noisy(criterion.state()));
}

TEST(stages_sampling_criterion, never_converges_before_min_samples) {
  for (const std::size_t min_samples : {std::size_t{10}, std::size_t{25}}) {
    sampling_criterion criterion(
        {.max_noise = 0.005, .min_samples = min_samples, .min_time_s = 0.0, .max_time_s = 15.0});
    // Constant samples: the noise is 0 from the 5th on, under target at once.
    EXPECT_EQ(samples_until_stop(
                  criterion, [](std::size_t) { return 1e6; }, 100),
              min_samples);
    EXPECT_DOUBLE_EQ(criterion.noise(), 0.0);
  }
}

TEST(stages_sampling_criterion, the_noise_needs_five_samples) {
  sampling_criterion criterion(
      {.max_noise = 0.005, .min_samples = 1, .min_time_s = 0.0, .max_time_s = 15.0});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(criterion.add(1e6, 0.0), sampling_state::continue_sampling);
    EXPECT_TRUE(std::isnan(criterion.noise()));
  }
  EXPECT_EQ(criterion.add(1e6, 0.0), sampling_state::converged);
}

TEST(stages_sampling_criterion, noise_is_bessel_corrected_stdev_over_mean) {
  sampling_criterion criterion;
  for (const double sample_ns : {1.0, 2.0, 3.0, 4.0, 5.0}) {
    criterion.add(sample_ns, 0.0);
  }
  EXPECT_DOUBLE_EQ(criterion.mean_ns(), 3.0);
  EXPECT_DOUBLE_EQ(criterion.noise(), std::sqrt(2.5) / 3.0); // variance 10 / (5 - 1)
}

TEST(stages_sampling_criterion, noisy_data_stops_at_the_time_cap) {
  sampling_criterion criterion(
      {.max_noise = 0.005, .min_samples = 10, .min_time_s = 0.0, .max_time_s = 10.0});
  // 1/64 s a sample: 640 samples reach 10 s exactly, which is not past the cap.
  EXPECT_EQ(samples_until_stop(criterion, drifting_ns, 10'000, 1.0 / 64.0), 641u);
  EXPECT_EQ(criterion.state(), sampling_state::time_cap);
  EXPECT_TRUE(is_noisy(criterion.state()));
  EXPECT_NEAR(criterion.noise(), 0.2258, 0.0001); // the achieved noise, far above the target
}

TEST(stages_sampling_criterion, converging_on_the_sample_past_the_cap_is_converged) {
  sampling_criterion criterion(
      {.max_noise = 0.005, .min_samples = 10, .min_time_s = 0.0, .max_time_s = 1.0});
  for (int i = 0; i < 9; ++i) {
    criterion.add(1e6, 0.5);
  }
  EXPECT_EQ(criterion.add(1e6, 2.0), sampling_state::converged); // NVBench: criterion first
}

TEST(stages_sampling_criterion, stationary_noise_above_target_converges_above_it) {
  sampling_criterion criterion(
      {.max_noise = 0.005, .min_samples = 10, .min_time_s = 0.0, .max_time_s = 1e9});
  // A repeating 1.00, 1.02, 0.98, 1.00 ms pattern: noise ~1.4 %, settled. The history first
  // exceeds 64 entries at sample 69 (the first estimate is at 5); the check runs on multiples
  // of 16.
  const auto pattern_ns = [](std::size_t index) {
    constexpr double factors[] = {1.00, 1.02, 0.98, 1.00};
    return 1e6 * factors[index % 4];
  };
  EXPECT_EQ(samples_until_stop(criterion, pattern_ns, 10'000), 80u);
  EXPECT_EQ(criterion.state(), sampling_state::noise_converged_above_target);
  EXPECT_TRUE(is_noisy(criterion.state()));
  EXPECT_NEAR(criterion.noise(), 0.01423, 0.000'01);
  EXPECT_LT(criterion.noise_history_spread(), 0.05);
}

TEST(stages_sampling_criterion, drifting_noise_never_converges_above_target_early) {
  sampling_criterion criterion(
      {.max_noise = 0.005, .min_samples = 10, .min_time_s = 0.0, .max_time_s = 1e9});
  // The rule fires only once the growing noise flattens enough: at 1568 samples, not before.
  EXPECT_EQ(samples_until_stop(criterion, drifting_ns, 10'000), 1568u);
  EXPECT_EQ(criterion.state(), sampling_state::noise_converged_above_target);
}

TEST(stages_sampling_criterion, non_finite_and_negative_samples_are_rejected) {
  sampling_criterion criterion(
      {.max_noise = 0.005, .min_samples = 10, .min_time_s = 0.0, .max_time_s = 15.0});
  for (int i = 0; i < 9; ++i) {
    criterion.add(1e6, 0.0);
  }
  EXPECT_EQ(criterion.add(nan, 0.0), sampling_state::continue_sampling);
  EXPECT_EQ(criterion.add(std::numeric_limits<double>::infinity(), 0.0),
            sampling_state::continue_sampling);
  EXPECT_EQ(criterion.add(-1.0, 0.0), sampling_state::continue_sampling);
  EXPECT_EQ(criterion.sample_count(), 9u);
  EXPECT_EQ(criterion.rejected_count(), 3u);
  EXPECT_DOUBLE_EQ(criterion.mean_ns(), 1e6);
  EXPECT_EQ(criterion.add(1e6, 0.0), sampling_state::converged); // the 10th accepted sample
}

TEST(stages_sampling_criterion, a_stream_of_nan_ends_as_undefined_noise) {
  sampling_criterion criterion;
  for (int i = 0; i < 63; ++i) {
    ASSERT_EQ(criterion.add(nan, 0.0), sampling_state::continue_sampling);
  }
  EXPECT_EQ(criterion.add(nan, 0.0), sampling_state::noise_undefined);
  EXPECT_TRUE(is_noisy(criterion.state()));
  EXPECT_EQ(criterion.sample_count(), 0u);
  EXPECT_TRUE(std::isnan(criterion.mean_ns()));
}

TEST(stages_sampling_criterion, zero_mean_samples_end_as_undefined_noise) {
  sampling_criterion criterion(
      {.max_noise = 0.005, .min_samples = 10, .min_time_s = 0.0, .max_time_s = 15.0});
  // Estimates start at the 5th sample; the 64th undefined one in a row is the 68th sample.
  EXPECT_EQ(samples_until_stop(
                criterion, [](std::size_t) { return 0.0; }, 1000),
            68u);
  EXPECT_EQ(criterion.state(), sampling_state::noise_undefined);
  EXPECT_TRUE(std::isnan(criterion.noise()));
  EXPECT_DOUBLE_EQ(criterion.mean_ns(), 0.0);
}

TEST(stages_sampling_criterion, a_batch_stops_where_one_sample_at_a_time_would) {
  std::vector<std::int64_t> batch(600);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    batch[i] = static_cast<std::int64_t>(alternating_ns(i));
  }
  sampling_criterion criterion;
  const batch_outcome outcome = criterion.add_batch(batch, 100.0); // far past the cap
  EXPECT_EQ(outcome.state, sampling_state::converged);
  EXPECT_EQ(outcome.consumed, 501u);
  EXPECT_EQ(criterion.sample_count(), 501u);
}

TEST(stages_sampling_criterion, a_batch_is_judged_against_the_cap_once_it_is_all_in) {
  std::vector<std::int64_t> batch(50);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    batch[i] = static_cast<std::int64_t>(drifting_ns(i));
  }
  sampling_criterion criterion;
  const batch_outcome outcome = criterion.add_batch(batch, 16.0);
  EXPECT_EQ(outcome.state, sampling_state::time_cap);
  EXPECT_EQ(outcome.consumed, 50u);
  EXPECT_EQ(criterion.sample_count(), 50u);
  // An empty batch keeps the earlier end.
  EXPECT_EQ(criterion.add_batch({}, 0.0).state, sampling_state::time_cap);
}

TEST(stages_sampling_criterion, a_batch_under_the_cap_continues) {
  const std::vector<std::int64_t> batch{1'000'000, 1'000'000, 1'000'000};
  sampling_criterion criterion;
  const batch_outcome outcome = criterion.add_batch(batch, 1.0);
  EXPECT_EQ(outcome.state, sampling_state::continue_sampling);
  EXPECT_EQ(outcome.consumed, 3u);
}

TEST(stages_sampling_criterion, bad_targets_name_the_field_and_the_fix) {
  EXPECT_EQ(check_sampling_target({.max_noise = 0.0}),
            "sampling target: max_noise is 0; expected a relative standard deviation above 0, "
            "e.g. 0.005 for 0.5 %");
  EXPECT_EQ(
      check_sampling_target({.min_time_s = -1.0}),
      "sampling target: min_time_s is -1; expected a finite number of seconds >= 0, e.g. 0.5");
  EXPECT_EQ(check_sampling_target({.max_time_s = nan}),
            "sampling target: max_time_s is nan; expected seconds above 0, e.g. 15, or infinity "
            "for no cap");
  EXPECT_EQ(check_sampling_target({.max_time_s = std::numeric_limits<double>::infinity()}), "");
}

TEST(stages_sampling_criterion, states_have_stable_names) {
  EXPECT_STREQ(to_string(sampling_state::continue_sampling), "continue_sampling");
  EXPECT_STREQ(to_string(sampling_state::converged), "converged");
  EXPECT_STREQ(to_string(sampling_state::noise_converged_above_target),
               "noise_converged_above_target");
  EXPECT_STREQ(to_string(sampling_state::time_cap), "time_cap");
  EXPECT_STREQ(to_string(sampling_state::noise_undefined), "noise_undefined");
  EXPECT_FALSE(is_noisy(sampling_state::continue_sampling));
}

} // namespace
} // namespace rpl::stages
