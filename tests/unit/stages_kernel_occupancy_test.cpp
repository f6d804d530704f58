// One kernel's occupancy as profile, analyze and inspect report it
// (stages/analysis/kernel_occupancy.hpp).

#include <gtest/gtest.h>

#include "stages/analysis/kernel_occupancy.hpp"

namespace rpl::stages {
namespace {

occupancy_result lds_limited() {
  occupancy_result r;
  r.active_waves_per_simd = 2;
  r.max_waves_per_simd = 8;
  r.active_workgroups_per_cu = 2;
  r.occupancy = 0.25;
  r.limiter = occupancy_limiter::lds;
  r.limit_by_resource = {{"lds", 2}, {"vgprs", 4}, {"waves", 8}};
  r.suggestions = {"with at most 21 KiB LDS per workgroup: 3 waves per SIMD (37.5%)"};
  r.unit = "waves per SIMD";
  r.wave_size = 64;
  return r;
}

TEST(stages_kernel_occupancy, json_has_every_field_and_the_target_only_when_named) {
  kernel_occupancy o{
      .target = "gfx90a", .threads_per_block = 256, .result = lds_limited(), .lds_bytes = 32768};
  EXPECT_EQ(to_json(o), nlohmann::json::parse(R"json({
    "target": "gfx90a", "threads_per_block": 256, "lds_bytes": 32768, "wave_size": 64,
    "unit": "waves per SIMD",
    "active": 2, "max": 8, "workgroups_per_cu": 2, "theoretical": 0.25, "limiter": "lds",
    "limits": {"lds": 2, "vgprs": 4, "waves": 8},
    "suggestions": ["with at most 21 KiB LDS per workgroup: 3 waves per SIMD (37.5%)"]})json"));
  o.target.reset();
  EXPECT_FALSE(to_json(o).contains("target"));
  EXPECT_EQ(to_json(o)["threads_per_block"], 256);
}

TEST(stages_kernel_occupancy, summary_is_active_over_max_with_whole_percent_and_limiter) {
  EXPECT_EQ(occupancy_summary(lds_limited()), "2/8 waves per SIMD (25%, lds)");
  occupancy_result warps = lds_limited();
  warps.active_waves_per_simd = 40;
  warps.max_waves_per_simd = 64;
  warps.occupancy = 0.625;
  warps.unit = "warps per SM";
  warps.limiter = occupancy_limiter::registers;
  EXPECT_EQ(occupancy_summary(warps), "40/64 warps per SM (62%, registers)"); // %.0f: half to even
}

TEST(stages_kernel_occupancy, compute_names_the_target_when_the_report_does) {
  const arch_model arch = load_arch("gfx90a");
  const kernel_resources k{.block_size = 256, .vgprs = 128, .lds_bytes = 4096};
  const kernel_occupancy named = compute_kernel_occupancy(arch, k, true);
  EXPECT_EQ(named.target, "gfx90a");
  EXPECT_EQ(named.threads_per_block, 256u);
  EXPECT_EQ(named.lds_bytes, 4096u);                 // what the model was given
  EXPECT_EQ(named.result.active_waves_per_simd, 4u); // 512 / 128
  EXPECT_EQ(named.result.limiter, occupancy_limiter::vgprs);
  EXPECT_FALSE(compute_kernel_occupancy(arch, k, false).target.has_value());
}

} // namespace
} // namespace rpl::stages
