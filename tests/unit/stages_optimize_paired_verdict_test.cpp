#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "stages/optimize/paired_verdict.hpp"

namespace rpl::stages::optimize {
namespace {

std::vector<double> rounds(double base, double wobble, std::size_t n) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) {
    v.push_back(base * (1.0 + wobble * (static_cast<double>(i % 5) - 2.0) / 2.0));
  }
  return v;
}

TEST(paired_verdict, accepts_a_candidate_faster_beyond_the_noise) {
  const auto incumbent = rounds(1000.0, 0.002, 15);
  std::vector<double> candidate;
  for (double x : incumbent) {
    candidate.push_back(x * 0.92);
  }
  const auto v = judge_pair(incumbent, candidate, {});
  EXPECT_EQ(v.outcome, paired_outcome::faster) << v.summary;
  EXPECT_NEAR(v.relative_change.median, -0.08, 1e-9);
  EXPECT_LT(v.relative_change.high, 0.0);
  EXPECT_NE(v.summary.find("1.087x"), std::string::npos) << v.summary;
}

TEST(paired_verdict, a_difference_inside_the_noise_is_not_accepted) {
  const auto incumbent = rounds(1000.0, 0.002, 15);
  std::vector<double> candidate;
  for (double x : incumbent) {
    candidate.push_back(x * 0.998);
  }
  finalist_config config;
  config.target_noise = 0.01;
  EXPECT_EQ(judge_pair(incumbent, candidate, config).outcome, paired_outcome::within_noise);
}

TEST(paired_verdict, slower_and_unmeasured) {
  const auto incumbent = rounds(1000.0, 0.002, 15);
  std::vector<double> candidate;
  for (double x : incumbent) {
    candidate.push_back(x * 1.2);
  }
  EXPECT_EQ(judge_pair(incumbent, candidate, {}).outcome, paired_outcome::slower);
  const std::vector<double> missing(15, std::nan(""));
  EXPECT_EQ(judge_pair(incumbent, missing, {}).outcome, paired_outcome::not_measured);
}

TEST(paired_verdict, too_few_rounds_cannot_accept) {
  const std::vector<double> incumbent = {1000.0, 1001.0};
  const std::vector<double> candidate = {900.0, 901.0};
  EXPECT_NE(judge_pair(incumbent, candidate, {}).outcome, paired_outcome::faster);
}

} // namespace
} // namespace rpl::stages::optimize
