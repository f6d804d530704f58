// compare's pure logic (stages/compare/): the median ratio's interval, the verdict rule, kernel
// matching by name and launch shape, the reasons, the fail rule and the launch collector. Samples
// come from a seeded generator, so every run sees the same numbers.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "stages/compare/change_reasons.hpp"
#include "stages/compare/compare_verdict.hpp"
#include "stages/compare/comparison_builder.hpp"
#include "stages/compare/fail_rule.hpp"
#include "stages/compare/kernel_matching.hpp"
#include "stages/compare/launch_collector.hpp"
#include "stages/compare/median_ratio.hpp"

namespace rpl {
namespace {

namespace cmp = stages::compare;

/// Kernel durations around `median_ns`: log-normal with `cv` spread, plus a few preempted
/// launches far in the right tail, as GPU dispatches look.
std::vector<double> cmp_durations(std::size_t n, double median_ns, double cv, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  auto uniform = [&] { return (static_cast<double>(random() >> 11) + 0.5) / 9007199254740992.0; };
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) {
    const double z =
        std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
    double d = median_ns * std::exp(cv * z);
    if (i % 97 == 13)
      d *= 3.0; // a preempted launch
    out.push_back(d);
  }
  return out;
}

cmp::launch_samples cmp_launch(const std::string& name,
                               std::uint32_t grid,
                               std::uint32_t block,
                               std::vector<double> durations = {1000, 1001, 1002}) {
  cmp::launch_samples l;
  l.name = name;
  l.grid = {grid, 1, 1};
  l.block = {block, 1, 1};
  l.durations_ns = std::move(durations);
  return l;
}

TEST(compare_median_ratio, a_ten_percent_shift_excludes_one) {
  const auto base = cmp_durations(400, 10'000, 0.05, 1);
  const auto next = cmp_durations(400, 11'000, 0.05, 2);
  const auto r = cmp::median_ratio(base, next);
  ASSERT_TRUE(r.bounded);
  EXPECT_NEAR(r.ratio, 1.10, 0.02);
  EXPECT_GT(r.low, 1.0);
  EXPECT_LT(r.low, r.ratio);
  EXPECT_GT(r.high, r.ratio);
  EXPECT_EQ(cmp::judge(r, 0.02), cmp::kernel_verdict::slower);
  // The same samples the other way round: faster, the interval the reciprocal's.
  const auto back = cmp::median_ratio(next, base);
  EXPECT_NEAR(back.ratio, 1.0 / r.ratio, 1e-12);
  EXPECT_NEAR(back.low, 1.0 / r.high, 1e-9);
  EXPECT_EQ(cmp::judge(back, 0.02), cmp::kernel_verdict::faster);
}

TEST(compare_median_ratio, two_samples_of_one_distribution_include_one_and_are_same) {
  // A 95 % interval misses the truth 1 time in 20: over 40 seeded pairs, 38 or so include 1.0,
  // and the noise band keeps every verdict `same`.
  std::size_t covered = 0;
  for (std::uint64_t seed = 10; seed < 50; ++seed) {
    const auto base = cmp_durations(400, 10'000, 0.05, seed);
    const auto next = cmp_durations(400, 10'000, 0.05, seed + 100);
    const auto r = cmp::median_ratio(base, next);
    ASSERT_TRUE(r.bounded);
    covered += r.low <= 1.0 && r.high >= 1.0 ? 1 : 0;
    EXPECT_EQ(cmp::judge(r, 0.02), cmp::kernel_verdict::same) << seed;
  }
  EXPECT_GE(covered, 35u);
  // The first pair, which must include 1.0 however the sample is drawn (fixed seed).
  const auto r = cmp::median_ratio(cmp_durations(400, 10'000, 0.05, 10),
                                   cmp_durations(400, 10'000, 0.05, 110));
  EXPECT_LE(r.low, 1.0);
  EXPECT_GE(r.high, 1.0);
}

TEST(compare_median_ratio, is_deterministic_and_drops_bad_values) {
  const auto base = cmp_durations(101, 5'000, 0.1, 3);
  auto next = cmp_durations(101, 5'200, 0.1, 4);
  const auto first = cmp::median_ratio(base, next);
  next.push_back(-1.0);
  next.push_back(std::nan(""));
  next.push_back(0.0);
  const auto second = cmp::median_ratio(base, next);
  EXPECT_EQ(first.ratio, second.ratio);
  EXPECT_EQ(first.low, second.low);
  EXPECT_EQ(first.high, second.high);
  // Too few dispatches: the ratio, but no interval, so no verdict but ambiguous.
  const auto few = cmp::median_ratio(std::vector<double>{1000, 1010}, std::vector<double>{2000});
  EXPECT_FALSE(few.bounded);
  EXPECT_DOUBLE_EQ(few.ratio, 2000.0 / 1005.0);
  EXPECT_EQ(cmp::judge(few, 0.02), cmp::kernel_verdict::ambiguous);
}

TEST(compare_median_ratio, the_log_median_error_shrinks_with_the_sample) {
  auto small = cmp_durations(50, 1000, 0.1, 5), large = cmp_durations(5000, 1000, 0.1, 5);
  const auto s = cmp::log_median_of(small), l = cmp::log_median_of(large);
  EXPECT_GT(s.standard_error, 3.0 * l.standard_error);
  // About cv * sqrt(pi / 2) / sqrt(n) for a log-normal's log-median.
  EXPECT_NEAR(l.standard_error, 0.1 * 1.2533 / std::sqrt(5000.0), 0.0006);
  EXPECT_NEAR(cmp::normal_quantile(0.975), 1.959964, 1e-5);
}

cmp::ratio_interval cmp_interval(double ratio, double low, double high) {
  cmp::ratio_interval r;
  r.ratio = ratio;
  r.low = low;
  r.high = high;
  r.bounded = true;
  return r;
}

TEST(compare_verdict, the_band_decides_same_slower_faster_and_ambiguous) {
  using v = cmp::kernel_verdict;
  EXPECT_EQ(cmp::judge(cmp_interval(1.005, 0.99, 1.015), 0.02), v::same);
  EXPECT_EQ(cmp::judge(cmp_interval(1.10, 1.08, 1.12), 0.02), v::slower);
  EXPECT_EQ(cmp::judge(cmp_interval(0.90, 0.88, 0.92), 0.02), v::faster);
  // Excludes 1 but the ratio is inside the band, and the interval pokes out: ambiguous.
  EXPECT_EQ(cmp::judge(cmp_interval(1.015, 1.005, 1.025), 0.02), v::ambiguous);
  // Outside the band in the point estimate, but the interval reaches 1: ambiguous.
  EXPECT_EQ(cmp::judge(cmp_interval(1.05, 0.99, 1.11), 0.02), v::ambiguous);
  // A wider band (the measured noise) makes a 3 % change `same`.
  EXPECT_EQ(cmp::judge(cmp_interval(1.03, 1.02, 1.04), 0.05), v::same);
  EXPECT_EQ(cmp::verdict_name(v::added), "new");
  EXPECT_EQ(cmp::verdict_name(v::removed), "gone");
}

TEST(compare_verdict, run_noise_is_the_largest_distance_from_the_median_run) {
  EXPECT_EQ(cmp::run_noise({100.0}), 0.0);
  EXPECT_NEAR(cmp::run_noise({100.0, 104.0, 98.0}), 0.04, 1e-12);
}

TEST(compare_matching, by_name_then_by_shape_with_new_and_gone) {
  std::vector<cmp::launch_samples> base = {cmp_launch("gemm", 4096, 256),
                                           cmp_launch("reduce", 64, 64),
                                           cmp_launch("reduce", 128, 64), cmp_launch("old", 1, 1)};
  std::vector<cmp::launch_samples> next = {
      cmp_launch("gemm", 4096, 128), cmp_launch("reduce", 128, 64), cmp_launch("reduce", 256, 64),
      cmp_launch("fresh", 1, 1)};
  const auto m = cmp::match_launches(base, next);
  ASSERT_EQ(m.size(), 6u);
  // gemm: one shape a side, matched by name although the block changed.
  EXPECT_EQ(m[0].base, &base[0]);
  EXPECT_EQ(m[0].next, &next[0]);
  EXPECT_FALSE(m[0].by_shape);
  // reduce: several shapes, matched by shape; 64 is gone, 256 new.
  EXPECT_EQ(m[1].base, &base[2]);
  EXPECT_EQ(m[1].next, &next[1]);
  EXPECT_TRUE(m[1].by_shape);
  EXPECT_EQ(m[2].base, &base[1]);
  EXPECT_EQ(m[2].next, nullptr);
  EXPECT_EQ(m[3].base, &base[3]);
  EXPECT_EQ(m[4].next, &next[2]);
  EXPECT_EQ(m[4].base, nullptr);
  EXPECT_EQ(m[5].next, &next[3]);
  EXPECT_EQ(cmp::describe_shape({4096, 1, 1}, {16, 16, 1}), "grid 4096 block 16x16");
}

stages::kernel_report cmp_report(std::int64_t vgpr, double occupancy) {
  stages::kernel_report k;
  k.resources = stages::symbol_resources{vgpr, 0, 32, 4096, 0, 24};
  k.launch_lds_bytes = 4096;
  stages::kernel_occupancy o;
  o.result.occupancy = occupancy;
  o.result.limiter = stages::occupancy_limiter::vgprs;
  k.occupancy = o;
  return k;
}

TEST(compare_reasons, registers_occupancy_shape_and_counters_as_sentences) {
  const auto a = cmp_report(64, 1.0), b = cmp_report(96, 0.666);
  const auto la = cmp_launch("k", 4096, 256), lb = cmp_launch("k", 4096, 128);
  stages::rocpd::kernel_counters ca, cb;
  ca.counters["SQ_WAVES"] = {1000, 10};
  cb.counters["SQ_WAVES"] = {2000, 10};
  ca.counters["GRBM_COUNT"] = {100, 10};
  cb.counters["GRBM_COUNT"] = {101, 10};
  const auto reasons = cmp::change_reasons({&a, &la, &ca}, {&b, &lb, &cb});
  ASSERT_EQ(reasons.size(), 4u) << ::testing::PrintToString(reasons);
  EXPECT_EQ(reasons[0], "block 256 → 128");
  EXPECT_EQ(reasons[1], "registers 64 → 96");
  EXPECT_EQ(reasons[2], "occupancy 100 % → 67 % (limited by vgprs)");
  EXPECT_EQ(reasons[3], "SQ_WAVES 100 → 200 per dispatch");
  EXPECT_TRUE(cmp::change_reasons({&a, &la, nullptr}, {&a, &la, nullptr}).empty());
}

TEST(compare_fail_rule, parses_and_trips_on_the_interval_low_end) {
  std::string error;
  EXPECT_DOUBLE_EQ(cmp::parse_fail_rule("slower:5%", error)->slower_than, 0.05);
  EXPECT_DOUBLE_EQ(cmp::parse_fail_rule("slower:2.5", error)->slower_than, 0.025);
  EXPECT_DOUBLE_EQ(cmp::parse_fail_rule("slower", error)->slower_than, 0.0);
  EXPECT_FALSE(cmp::parse_fail_rule("faster:5%", error));
  EXPECT_NE(error.find("fix: --fail-on slower"), std::string::npos) << error;
  EXPECT_FALSE(cmp::parse_fail_rule("slower:lots", error));
  cmp::comparison c;
  cmp::kernel_change k;
  k.name = "gemm";
  k.verdict = cmp::kernel_verdict::slower;
  k.interval = cmp_interval(1.10, 1.04, 1.16);
  c.kernels.push_back(k);
  const cmp::fail_rule at5{0.05}, at3{0.03};
  EXPECT_TRUE(cmp::tripped(c, at5).empty());
  ASSERT_EQ(cmp::tripped(c, at3).size(), 1u);
  EXPECT_EQ(cmp::tripped(c, at3)[0], "gemm (ratio 1.100, interval 1.040-1.160)");
  // The critical path: 10 ms -> 10.3 ms trips at 2 %, not at 5 %.
  const auto path = cmp::parse_fail_rule("critical-path:2%", error);
  ASSERT_TRUE(path);
  c.base.critical_path_ns = 10e6;
  c.next.critical_path_ns = 10.3e6;
  ASSERT_EQ(cmp::tripped(c, *path).size(), 1u);
  EXPECT_EQ(cmp::tripped(c, *path)[0], "critical path 10.000 ms -> 10.300 ms (+3.0 %)");
  EXPECT_TRUE(cmp::tripped(c, *cmp::parse_fail_rule("critical-path:5%", error)).empty());
}

TEST(compare_collector, keeps_shapes_and_runs_apart_and_skips_helpers) {
  cmp::launch_collector collector({0, 1});
  const std::string gemm = "gemm", helper = "__amd_rocclr_fillBufferAligned";
  auto row = [](const std::string& name, std::uint32_t block, std::size_t db, std::int64_t ns) {
    stages::rocpd::dispatch_row r;
    r.kernel_name = name;
    r.grid[0] = 1024;
    r.grid[1] = r.grid[2] = 1;
    r.workgroup[0] = block;
    r.workgroup[1] = r.workgroup[2] = 1;
    r.database = db;
    r.start_ns = 0;
    r.end_ns = ns;
    return r;
  };
  collector.add(row(gemm, 256, 0, 100));
  collector.add(row(gemm, 256, 1, 120));
  collector.add(row(gemm, 128, 1, 300));
  collector.add(row(helper, 64, 0, 5));
  collector.add(row(gemm, 256, 1, 140));
  const auto launches = collector.finish();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].block[0], 256u);
  EXPECT_EQ(launches[0].durations_ns, (std::vector<double>{100, 120, 140}));
  EXPECT_EQ(launches[0].run_medians_ns, (std::vector<double>{100, 130}));
  EXPECT_EQ(launches[1].block[0], 128u);
  EXPECT_EQ(launches[1].run_medians_ns, (std::vector<double>{300}));
}

TEST(compare_builder, verdicts_new_gone_and_sorting) {
  stages::profile_report base_report, next_report;
  std::vector<cmp::launch_samples> base = {
      cmp_launch("steady", 64, 64, cmp_durations(300, 5000, 0.03, 7)),
      cmp_launch("slowed", 64, 64, cmp_durations(300, 8000, 0.03, 8)), cmp_launch("old", 64, 64)};
  std::vector<cmp::launch_samples> next = {
      cmp_launch("steady", 64, 64, cmp_durations(300, 5000, 0.03, 9)),
      cmp_launch("slowed", 64, 64, cmp_durations(300, 8800, 0.03, 10)),
      cmp_launch("fresh", 64, 64)};
  cmp::side_input a, b;
  a.summary.runs = b.summary.runs = 1;
  a.report = &base_report;
  b.report = &next_report;
  a.launches = &base;
  b.launches = &next;
  auto c = cmp::build_comparison(a, b, {});
  ASSERT_EQ(c.kernels.size(), 4u);
  EXPECT_EQ(c.kernels[0].name, "slowed");
  EXPECT_EQ(c.kernels[0].verdict, cmp::kernel_verdict::slower);
  EXPECT_EQ(c.kernels[1].verdict, cmp::kernel_verdict::added);
  EXPECT_EQ(c.kernels[2].verdict, cmp::kernel_verdict::removed);
  EXPECT_EQ(c.kernels[3].name, "steady");
  EXPECT_EQ(c.kernels[3].verdict, cmp::kernel_verdict::same);
  // The slower kernel is asked on NEW's timeline how much going back would save.
  const auto plan = cmp::plan_what_if(c);
  ASSERT_EQ(plan.next.names, std::vector<std::string>{"slowed"});
  EXPECT_NEAR(plan.next.percents[0], 100.0 * (1 - 1 / c.kernels[0].interval.ratio), 1e-9);
  EXPECT_TRUE(plan.base.names.empty());
  cmp::apply_what_if(c, plan, {}, {0.0});
  EXPECT_EQ(*c.kernels[0].critical_path_effect_ns, 0.0);
  EXPECT_NE(c.kernels[0].critical_path_note.find("~nothing"), std::string::npos);
}

} // namespace
} // namespace rpl
