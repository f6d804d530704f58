#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/search/finalists.hpp"

namespace rpl::stages {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
const finalist_config defaults{};

// SplitMix64's finalizer: decorrelates the LCG streams of neighbouring seeds.
std::uint64_t mix(std::uint64_t seed) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// One finalist's rounds: base x (1 + drift x r / (rounds - 1)) x (1 + e_r), e_r uniform with
// relative standard deviation `noise`, from a 64-bit LCG (Knuth's MMIX constants), so the same
// on every platform and standard library.
std::vector<double> rounds_ns(
    double base_ns, double noise, std::size_t rounds, std::uint64_t seed, double drift = 0.0) {
  std::vector<double> samples(rounds);
  std::uint64_t state = mix(seed);
  for (std::size_t r = 0; r < rounds; ++r) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double uniform = static_cast<double>(state >> 11) / 9007199254740992.0; // [0, 1)
    const double trend = drift * static_cast<double>(r) / static_cast<double>(rounds - 1);
    samples[r] = base_ns * (1.0 + trend) * (1.0 + noise * std::sqrt(12.0) * (uniform - 0.5));
  }
  return samples;
}

// Ten samples within +-0.1 % of base: their 95 % median interval is [0.999, 1.001] x base.
std::vector<double> tight_ns(double base_ns) {
  std::vector<double> samples;
  for (int i = 0; i < 10; ++i) {
    samples.push_back(base_ns * (1.0 + 0.0005 * static_cast<double>(i % 5 - 2)));
  }
  return samples;
}

const finalist_comparison& row_of(const final_decision& decision, const std::string& key) {
  for (const finalist_comparison& row : decision.finalists) {
    if (row.key == key) {
      return row;
    }
  }
  throw std::runtime_error("no finalist " + key);
}

TEST(stages_finalists, median_interval_of_ten_is_second_to_ninth) {
  const std::vector<double> values{10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
  const median_interval interval = estimate_median(values, 0.95);
  EXPECT_EQ(interval.n, 10u);
  EXPECT_DOUBLE_EQ(interval.median, 5.5);
  EXPECT_DOUBLE_EQ(interval.low, 2.0); // [x_(3), x_(8)] covers only 89.1 %
  EXPECT_DOUBLE_EQ(interval.high, 9.0);
  EXPECT_DOUBLE_EQ(interval.confidence, 1.0 - 2.0 * 11.0 / 1024.0); // 97.85 %
}

TEST(stages_finalists, too_few_values_give_the_whole_range_below_the_level) {
  const std::vector<double> five{3, 1, 2, 5, 4};
  const median_interval interval = estimate_median(five, 0.95);
  EXPECT_DOUBLE_EQ(interval.low, 1.0);
  EXPECT_DOUBLE_EQ(interval.high, 5.0);
  EXPECT_DOUBLE_EQ(interval.confidence, 0.9375); // < 95 %: 95 % needs six values
  const std::vector<double> six{3, 1, 2, 5, 4, 6};
  EXPECT_DOUBLE_EQ(estimate_median(six, 0.95).confidence, 0.96875);
  const std::vector<double> one{7};
  const median_interval single = estimate_median(one, 0.95);
  EXPECT_DOUBLE_EQ(single.median, 7.0);
  EXPECT_DOUBLE_EQ(single.confidence, 0.0);
}

TEST(stages_finalists, long_samples_do_not_underflow) {
  std::vector<double> values;
  for (int i = 2000; i >= 1; --i) {
    values.push_back(i);
  }
  const median_interval interval = estimate_median(values, 0.95);
  EXPECT_DOUBLE_EQ(interval.low, 956.0); // exact binomial: k = 956 for n = 2000
  EXPECT_DOUBLE_EQ(interval.high, 1045.0);
  EXPECT_NEAR(interval.confidence, 0.953447, 1e-6);
}

TEST(stages_finalists, non_finite_values_are_left_out) {
  const std::vector<double> values{nan, 2.0, std::numeric_limits<double>::infinity(), 4.0};
  EXPECT_EQ(estimate_median(values, 0.95).n, 2u);
  EXPECT_DOUBLE_EQ(estimate_median(values, 0.95).median, 3.0);
  const median_interval none = estimate_median(std::vector<double>{nan}, 0.95);
  EXPECT_EQ(none.n, 0u);
  EXPECT_TRUE(std::isnan(none.median));
  EXPECT_TRUE(std::isnan(none.low));
}

TEST(stages_finalists, two_percent_faster_with_low_noise_wins_alone) {
  const std::vector<keyed_samples> finalists{{"slow", rounds_ns(1.0e6, 0.003, 30, 1)},
                                             {"fast", rounds_ns(0.98e6, 0.003, 30, 2)}};
  const final_decision decision = decide_winner(finalists, defaults);
  EXPECT_EQ(decision.winner, "fast");
  EXPECT_EQ(decision.tie_set, std::vector<std::string>{"fast"});
  ASSERT_EQ(decision.finalists.size(), 2u);
  EXPECT_EQ(decision.finalists[0].key, "fast");
  const finalist_comparison& slow = decision.finalists[1];
  EXPECT_FALSE(slow.tied);
  EXPECT_EQ(slow.relative_difference.n, 30u);
  EXPECT_NEAR(slow.relative_difference.confidence, 0.9572, 0.0001); // [q_(10), q_(21)] of 30
  EXPECT_NEAR(slow.relative_difference.median, 1.0 / 0.98 - 1.0, 0.002);
  EXPECT_GT(slow.relative_difference.low, 0.005);
  EXPECT_NEAR(slow.paired_noise, 0.003 * std::sqrt(2.0), 0.0015); // two 0.3 % noises
  EXPECT_DOUBLE_EQ(slow.separating_noise, std::max(0.005, slow.paired_noise));
  const finalist_comparison& fast = decision.finalists[0];
  EXPECT_TRUE(fast.tied); // the winner is tied with itself: a difference of exactly 0
  EXPECT_DOUBLE_EQ(fast.relative_difference.median, 0.0);
  EXPECT_DOUBLE_EQ(fast.relative_difference.high, 0.0);
}

TEST(stages_finalists, a_difference_inside_the_noise_is_a_tie) {
  const std::vector<keyed_samples> finalists{{"a", rounds_ns(1.000e6, 0.01, 30, 3)},
                                             {"b", rounds_ns(1.001e6, 0.01, 30, 4)}};
  const final_decision decision = decide_winner(finalists, defaults);
  ASSERT_EQ(decision.tie_set.size(), 2u);
  EXPECT_EQ(decision.tie_set[0], decision.winner);
  const finalist_comparison& other = decision.finalists[1];
  EXPECT_TRUE(other.tied);
  EXPECT_GT(other.separating_noise, 0.01); // the paired noise, over the 0.5 % target
  EXPECT_DOUBLE_EQ(other.separating_noise, other.paired_noise);
}

TEST(stages_finalists, three_way_with_one_clearly_slower) {
  const std::vector<keyed_samples> finalists{{"c", rounds_ns(1.030e6, 0.003, 30, 5)},
                                             {"b", rounds_ns(1.001e6, 0.003, 30, 6)},
                                             {"a", rounds_ns(1.000e6, 0.003, 30, 7)}};
  const final_decision decision = decide_winner(finalists, defaults);
  ASSERT_EQ(decision.finalists.size(), 3u);
  EXPECT_EQ(decision.finalists[2].key, "c");
  EXPECT_FALSE(decision.finalists[2].tied);
  EXPECT_EQ(decision.tie_set.size(), 2u);
  EXPECT_TRUE(row_of(decision, "a").tied);
  // "b" is measurably slower (its interval excludes 0) but by less than the noise: tied.
  const finalist_comparison& b = row_of(decision, "b");
  EXPECT_TRUE(b.tied);
  EXPECT_GT(b.relative_difference.low, 0.0);
  EXPECT_LT(b.relative_difference.high, b.separating_noise);
  EXPECT_NEAR(row_of(decision, "c").relative_difference.median, 0.03, 0.003);
}

TEST(stages_finalists, pairing_cancels_a_drift_common_to_the_rounds) {
  // Every finalist gets 5 % slower over the round; "b" is 1 % slower than "a" throughout.
  const std::vector<keyed_samples> finalists{{"a", rounds_ns(1.00e6, 0.002, 40, 8, 0.05)},
                                             {"b", rounds_ns(1.01e6, 0.002, 40, 9, 0.05)}};
  const final_decision decision = decide_winner(finalists, defaults);
  EXPECT_EQ(decision.winner, "a");
  EXPECT_EQ(decision.tie_set, std::vector<std::string>{"a"});
  const finalist_comparison& a = row_of(decision, "a");
  const finalist_comparison& b = row_of(decision, "b");
  EXPECT_FALSE(b.tied);
  EXPECT_NEAR(b.relative_difference.median, 0.01, 0.002);
  // Unpaired, the drift hides the difference: the two medians' intervals overlap.
  EXPECT_LE(b.time_ns.low, a.time_ns.high);
}

TEST(stages_finalists, the_same_input_gives_the_same_decision_in_any_order) {
  const std::vector<keyed_samples> forward{{"a", rounds_ns(1.000e6, 0.01, 25, 10)},
                                           {"b", rounds_ns(1.002e6, 0.01, 25, 11)},
                                           {"c", rounds_ns(1.050e6, 0.01, 25, 12)}};
  const std::vector<keyed_samples> backward{forward[2], forward[1], forward[0]};
  const final_decision first = decide_winner(forward, defaults);
  for (const auto& input : {forward, backward}) {
    const final_decision again = decide_winner(input, defaults);
    EXPECT_EQ(again.winner, first.winner);
    EXPECT_EQ(again.tie_set, first.tie_set);
    ASSERT_EQ(again.finalists.size(), first.finalists.size());
    for (std::size_t i = 0; i < first.finalists.size(); ++i) {
      EXPECT_EQ(again.finalists[i].key, first.finalists[i].key);
      EXPECT_EQ(again.finalists[i].relative_difference.low,
                first.finalists[i].relative_difference.low);
      EXPECT_EQ(again.finalists[i].relative_difference.high,
                first.finalists[i].relative_difference.high);
      EXPECT_EQ(again.finalists[i].tied, first.finalists[i].tied);
    }
  }
}

TEST(stages_finalists, missed_rounds_are_left_out_of_the_pairs) {
  std::vector<double> a = rounds_ns(1.00e6, 0.002, 20, 13);
  std::vector<double> b = rounds_ns(1.05e6, 0.002, 22, 14); // two extra rounds, unpaired
  a[3] = nan;
  b[7] = -1.0;
  const std::vector<keyed_samples> finalists{{"a", a}, {"b", b}};
  const final_decision decision = decide_winner(finalists, defaults);
  EXPECT_EQ(row_of(decision, "a").time_ns.n, 19u);
  EXPECT_EQ(row_of(decision, "b").time_ns.n, 21u);
  EXPECT_EQ(row_of(decision, "b").relative_difference.n, 18u);
  EXPECT_FALSE(row_of(decision, "b").tied);
}

TEST(stages_finalists, too_few_rounds_cannot_separate) {
  // 5 % apart, but five rounds cannot reach 95 %: tied, with the coverage said.
  const std::vector<keyed_samples> finalists{{"a", rounds_ns(1.00e6, 0.002, 5, 15)},
                                             {"b", rounds_ns(1.05e6, 0.002, 5, 16)}};
  const final_decision decision = decide_winner(finalists, defaults);
  EXPECT_EQ(decision.tie_set.size(), 2u);
  EXPECT_DOUBLE_EQ(row_of(decision, "b").relative_difference.confidence, 0.9375);
  EXPECT_GT(row_of(decision, "b").relative_difference.low, 0.04);
}

TEST(stages_finalists, a_finalist_without_samples_is_last_and_never_tied) {
  const std::vector<keyed_samples> finalists{{"empty", {nan, nan}},
                                             {"a", rounds_ns(1.0e6, 0.002, 10, 17)}};
  const final_decision decision = decide_winner(finalists, defaults);
  EXPECT_EQ(decision.winner, "a");
  EXPECT_EQ(decision.tie_set, std::vector<std::string>{"a"});
  ASSERT_EQ(decision.finalists.size(), 2u);
  EXPECT_EQ(decision.finalists[1].key, "empty");
  EXPECT_FALSE(decision.finalists[1].tied);
  EXPECT_EQ(decision.finalists[1].time_ns.n, 0u);

  const std::vector<keyed_samples> none{{"empty", {}}};
  const final_decision nobody = decide_winner(none, defaults);
  EXPECT_EQ(nobody.winner, "");
  EXPECT_TRUE(nobody.tie_set.empty());
  EXPECT_EQ(nobody.finalists.size(), 1u);
  EXPECT_TRUE(decide_winner({}, defaults).finalists.empty());
}

std::vector<keyed_samples> sweep_with_a_noisy_candidate() {
  std::vector<double> wide;
  for (int i = 0; i < 10; ++i) {
    wide.push_back(1e6 * (0.95 + 0.02 * i)); // median 1.04 ms, interval [0.97, 1.11] ms
  }
  return {{"d", tight_ns(1.03e6)}, {"wide", wide},         {"b", tight_ns(1.01e6)},
          {"a", tight_ns(1.00e6)}, {"none", {nan}},        {"c", tight_ns(1.02e6)},
          {"e", tight_ns(1.04e6)}, {"f", tight_ns(1.05e6)}};
}

TEST(stages_finalists, finalists_are_the_overlapping_then_the_best_medians) {
  const std::vector<keyed_samples> sweep = sweep_with_a_noisy_candidate();
  // "wide" cannot be told from "a" in the sweep: it goes before the tight, slower "b".
  finalist_config three = defaults;
  three.max_finalists = 3;
  EXPECT_EQ(choose_finalists(sweep, three), (std::vector<std::string>{"a", "b", "wide"}));
  EXPECT_EQ(choose_finalists(sweep, defaults),
            (std::vector<std::string>{"a", "b", "c", "d", "wide"}));
  finalist_config one = defaults;
  one.max_finalists = 1;
  EXPECT_EQ(choose_finalists(sweep, one), std::vector<std::string>{"a"});
}

TEST(stages_finalists, candidates_without_samples_are_never_finalists) {
  const std::vector<keyed_samples> sweep{{"none", {}}, {"nan", {nan, -5.0}}};
  EXPECT_TRUE(choose_finalists(sweep, defaults).empty());
  EXPECT_TRUE(choose_finalists({}, defaults).empty());
}

} // namespace
} // namespace rpl::stages
