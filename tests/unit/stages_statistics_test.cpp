#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/statistics/statistics.hpp"

namespace rpl::stages {
namespace {

TEST(stages_statistics, summarizes_one_to_four) {
  const std::vector<std::int64_t> samples{4, 1, 3, 2};
  const sample_stats stats = summarize(samples);
  EXPECT_EQ(stats.n, 4u);
  EXPECT_DOUBLE_EQ(stats.median, 2.5); // mean of the middle two
  EXPECT_DOUBLE_EQ(stats.mean, 2.5);
  EXPECT_DOUBLE_EQ(stats.stddev, std::sqrt(5.0 / 3.0)); // sample stddev, divides by n - 1
  EXPECT_DOUBLE_EQ(stats.cv, std::sqrt(5.0 / 3.0) / 2.5);
  EXPECT_DOUBLE_EQ(stats.min, 1.0);
  EXPECT_DOUBLE_EQ(stats.max, 4.0);
  EXPECT_EQ(stats.stability, stability_class::unstable);
}

TEST(stages_statistics, median_of_an_odd_count_is_the_middle_sample) {
  const std::vector<std::int64_t> samples{100, 5, 7};
  EXPECT_DOUBLE_EQ(summarize(samples).median, 7.0);
}

TEST(stages_statistics, a_single_sample_has_zero_spread) {
  const std::vector<std::int64_t> samples{42};
  const sample_stats stats = summarize(samples);
  EXPECT_EQ(stats.n, 1u);
  EXPECT_DOUBLE_EQ(stats.median, 42.0);
  EXPECT_DOUBLE_EQ(stats.stddev, 0.0);
  EXPECT_DOUBLE_EQ(stats.cv, 0.0);
  EXPECT_EQ(stats.stability, stability_class::stable);
}

TEST(stages_statistics, no_samples_give_all_zero) {
  const sample_stats stats = summarize({});
  EXPECT_EQ(stats.n, 0u);
  EXPECT_DOUBLE_EQ(stats.median, 0.0);
  EXPECT_DOUBLE_EQ(stats.mean, 0.0);
}

TEST(stages_statistics, zero_mean_gives_zero_cv) {
  const std::vector<std::int64_t> samples{-1, 1};
  EXPECT_DOUBLE_EQ(summarize(samples).cv, 0.0);
}

TEST(stages_statistics, median_of_huge_samples_does_not_overflow) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const std::vector<std::int64_t> samples{big, big};
  EXPECT_DOUBLE_EQ(summarize(samples).median, static_cast<double>(big));
}

TEST(stages_statistics, stable_timings_classify_as_stable) {
  const std::vector<std::int64_t> samples{1000, 1001, 999, 1000};
  EXPECT_EQ(summarize(samples).stability, stability_class::stable);
}

TEST(stages_statistics, cv_classes_include_their_upper_boundary) {
  EXPECT_EQ(classify_cv(0.0), stability_class::stable);
  EXPECT_EQ(classify_cv(0.05), stability_class::stable);
  EXPECT_EQ(classify_cv(0.0500001), stability_class::moderate);
  EXPECT_EQ(classify_cv(0.10), stability_class::moderate);
  EXPECT_EQ(classify_cv(0.1000001), stability_class::unstable);
  EXPECT_EQ(classify_cv(std::nan("")), stability_class::unstable);
}

TEST(stages_statistics, stability_classes_have_names) {
  EXPECT_EQ(std::string(to_string(stability_class::stable)), "stable");
  EXPECT_EQ(std::string(to_string(stability_class::moderate)), "moderate");
  EXPECT_EQ(std::string(to_string(stability_class::unstable)), "unstable");
}

} // namespace
} // namespace rpl::stages
