#include <gtest/gtest.h>

#include "stages/analysis/analysis_builder.hpp"
#include "support/json_schema.hpp"

namespace rpl::stages::analysis {
namespace {

kernel_report kernel(std::string name,
                     double total_ns,
                     double share,
                     std::uint32_t grid_items,
                     std::uint32_t block,
                     std::uint32_t workgroups_per_cu,
                     double occupancy) {
  kernel_report k;
  k.runtime.name = std::move(name);
  k.runtime.count = 10;
  k.runtime.total_ns = total_ns;
  k.runtime.mean_ns = total_ns / 10;
  k.share = share;
  k.grid = {grid_items, 1, 1};
  k.block = {block, 1, 1};
  kernel_occupancy o;
  o.result.active_workgroups_per_cu = workgroups_per_cu;
  o.result.occupancy = occupancy;
  o.result.limiter = occupancy_limiter::registers;
  k.occupancy = o;
  return k;
}

TEST(stages_analysis_builder, waves_are_the_grids_blocks_over_what_the_gpu_holds_at_once) {
  // 1,048,576 work-items in blocks of 256 = 4096 blocks; 8 per SM x 132 SMs = 1056 at once:
  // 4096 / 1056 = 3.878787...
  const auto k = kernel("gemm", 1, 1, 1 << 20, 256, 8, 0.5);
  EXPECT_NEAR(*waves_per_cu(k, 132.0), 4096.0 / 1056.0, 1e-12);
  // 1000 work-items in blocks of 256: 4 blocks (rounded up).
  EXPECT_NEAR(*waves_per_cu(kernel("tail", 1, 1, 1000, 256, 8, 0.5), 132.0), 4.0 / 1056.0, 1e-12);
  EXPECT_FALSE(waves_per_cu(k, std::nullopt));
  kernel_report no_occupancy = k;
  no_occupancy.occupancy.reset();
  EXPECT_FALSE(waves_per_cu(no_occupancy, 132.0));
}

TEST(stages_analysis_builder, joins_the_findings_classifies_and_orders_by_critical_path) {
  profile_report report;
  report.kernels = {kernel("big_but_off_path", 8e6, 0.8, 1 << 20, 256, 8, 0.5),
                    kernel("small_grid", 2e6, 0.2, 1024, 256, 8, 0.5)};
  analysis_sources sources;
  sources.report = &report;
  sources.compute_units = 132;
  sources.critical_path_ns = 5e6;
  sources.makespan_ns = 6e6;
  sources.notes = {"assumption"};
  kernel_findings big;
  big.compute_pct = 10;
  big.memory_pct = 90;
  big.roofline = {{"bound", "memory"}};
  big.critical_path_ns = 1e6;
  kernel_findings small;
  small.compute_pct = 5;
  small.memory_pct = 5;
  small.critical_path_ns = 4e6;
  small.min_slack_ns = 0;
  small.what_if = {{10, 4e5}};
  sources.kernels = {{"big_but_off_path", big}, {"small_grid", small}};
  const auto a = build_application_analysis(sources, bottleneck_thresholds{});
  ASSERT_EQ(a.kernels.size(), 2u);
  // small_grid: 4 blocks on 1056 slots = 0.0038 waves, both SOL < 60 -> under-occupied; first by
  // critical-path time (4 ms of 5 ms = 0.8).
  EXPECT_EQ(a.kernels[0].name, "small_grid");
  EXPECT_DOUBLE_EQ(*a.kernels[0].critical_path_share, 0.8);
  ASSERT_TRUE(a.kernels[0].bottleneck.label);
  EXPECT_EQ(*a.kernels[0].bottleneck.label, bottleneck_class::under_occupied);
  EXPECT_EQ(a.kernels[0].roofline_missing,
            "no counters for this kernel: record them with `rocm-perf profile --counters "
            "roofline`");
  EXPECT_EQ(a.kernels[1].name, "big_but_off_path");
  EXPECT_EQ(*a.kernels[1].bottleneck.label, bottleneck_class::memory_bandwidth_bound);
  EXPECT_EQ(a.kernels[1].inputs.occupancy_limiter, "registers");
  EXPECT_DOUBLE_EQ(*a.kernels[1].inputs.mean_duration_ns, 8e5);
  EXPECT_EQ(rpl::testing::schema_errors(to_json(a), "analysis.schema.json"),
            std::vector<std::string>{});
}

} // namespace
} // namespace rpl::stages::analysis
