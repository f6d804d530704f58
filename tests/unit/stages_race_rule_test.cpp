// stages/statistics/race_rule.hpp: when a candidate stops being timed because it cannot win.

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "stages/statistics/race_rule.hpp"

namespace rpl::stages {
namespace {

TEST(stages_race_rule, a_95_percent_interval_needs_six_samples_and_99_needs_eight) {
  EXPECT_EQ(race_min_samples(0.95), 6u);
  EXPECT_EQ(race_min_samples(0.99), 8u);
  EXPECT_EQ(race_min_samples(0.5), 2u);
}

TEST(stages_race_rule, raced_only_when_the_whole_interval_clears_the_bound_and_the_noise) {
  const std::vector<std::int64_t> six = {1100, 1090, 1110, 1105, 1095, 1120};
  const race_bound bound{1000.0, 0.005, 0.95};
  const race_check check = judge_race(six, bound);
  EXPECT_TRUE(check.raced);
  EXPECT_EQ(check.interval.n, 6u);
  EXPECT_EQ(check.interval.low, 1090.0) << "six samples: the whole range at 96.9 %";
  EXPECT_EQ(check.interval.high, 1120.0);
  // Five samples cover only 93.75 %: not enough to be sure, whatever they say.
  EXPECT_FALSE(judge_race(std::span(six).first(5), bound).raced);
  // One fast sample (inside the bound plus the noise) keeps it in the race.
  std::vector<std::int64_t> overlap = six;
  overlap[2] = 1004;
  EXPECT_FALSE(judge_race(overlap, bound).raced);
  // The margin is the separating noise: 10 % slower does not clear a 12 % noise.
  EXPECT_FALSE(judge_race(six, race_bound{1000.0, 0.12, 0.95}).raced);
  // No bound yet (nothing measured): never raced.
  EXPECT_FALSE(judge_race(six, race_bound{0.0, 0.005, 0.95}).raced);
}

TEST(stages_race_rule, ignores_samples_that_are_not_times) {
  const std::vector<std::int64_t> samples = {0, -5, 1100, 1090, 1110, 1105, 1095, 1120};
  const race_check check = judge_race(samples, race_bound{1000.0, 0.005, 0.95});
  EXPECT_EQ(check.interval.n, 6u);
  EXPECT_TRUE(check.raced);
}

} // namespace
} // namespace rpl::stages
