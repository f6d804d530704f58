#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/hardware/occupancy_model.hpp"

// NVIDIA's own calculator, header-only, where the CUDA toolkit is installed (the development
// machine has CUDA 13.0): the NVIDIA rules are cross-checked against it.
#if __has_include("/usr/local/cuda/include/cuda_occupancy.h")
#include "/usr/local/cuda/include/cuda_occupancy.h"
#define RPL_HAVE_CUDA_OCCUPANCY 1
#endif

namespace rpl::stages {
namespace {

using lim = occupancy_limiter;

/// One hand-computed case. Rules: hardware-models.md §2 (and configs/arch/<target>.json).
/// AMD: waves per workgroup w = ceil(block / wave); each resource allows some workgroups per CU
/// (WGP on RDNA); resident waves = workgroups × w; "per SIMD" is the busiest SIMD,
/// ceil(waves / SIMDs); occupancy = waves / (SIMDs × slots per SIMD).
/// NVIDIA: per-SM blocks = min(warps, blocks, registers, shared memory); occupancy = warps / 64.
struct occupancy_case {
  const char* name;
  const char* target;
  kernel_resources kernel;
  std::uint32_t waves_per_simd; ///< AMD busiest SIMD; NVIDIA warps per SM
  std::uint32_t workgroups;     ///< per CU / WGP / SM
  double occupancy;
  occupancy_limiter limiter;
};

// clang-format off
const std::vector<occupancy_case> occupancy_cases{
  // ---- gfx90a (CDNA2): 4 SIMDs × 8 slots; unified 512 VGPR+AGPR file, granule 8; 64 KiB LDS per
  //      CU in 512 B granules; 16 barriers; SGPR steps ≤80→10, ≤88→9, ≤100→8, else 7.
  // 128 VGPR → 512/128 = 4 waves/SIMD; w = 256/64 = 4 → 4×4/4 = 4 WGs → 16 waves → 4/SIMD, 16/32.
  {"gfx90a_128_vgprs", "gfx90a", {.block_size = 256, .vgprs = 128, .sgprs = 32}, 4, 4, 0.5, lim::vgprs},
  // AGPRs share the file: alignTo(128, 4) + 128 = 256 → 512/256 = 2/SIMD → 4×2/4 = 2 WGs → 8 waves.
  {"gfx90a_agprs_fill_the_unified_file", "gfx90a", {.block_size = 256, .vgprs = 128, .agprs = 128}, 2, 2, 0.25, lim::vgprs},
  // AGPRs start at an aligned offset: alignTo(61, 4) = 64, + 67 = 131 → granule 136 → 512/136 = 3
  // (unaligned 128 would give 4); w = 1 → 4×3/1 = 12 WGs → 12 waves → 3/SIMD, 12/32.
  {"gfx90a_agprs_follow_aligned_vgprs", "gfx90a", {.block_size = 64, .vgprs = 61, .agprs = 67}, 3, 12, 0.375, lim::vgprs},
  // 16 KiB LDS → 65536/16384 = 4 WGs (VGPRs 512/32 → 8: no limit) → 16 waves → 4/SIMD.
  {"gfx90a_16_kib_lds", "gfx90a", {.block_size = 256, .vgprs = 32, .lds_bytes = 16384}, 4, 4, 0.5, lim::lds},
  // 16385 B rounds up to 33 × 512 = 16896 → 65536/16896 = 3 WGs → 12 waves → 3/SIMD.
  {"gfx90a_lds_rounds_up_to_512_bytes", "gfx90a", {.block_size = 256, .vgprs = 32, .lds_bytes = 16385}, 3, 3, 0.375, lim::lds},
  // 102 SGPRs > 100 → 7 waves/SIMD → 4×7/4 = 7 WGs → 28 waves → 7/SIMD.
  {"gfx90a_102_sgprs", "gfx90a", {.block_size = 256, .vgprs = 32, .sgprs = 102}, 7, 7, 0.875, lim::sgprs},
  // 192 threads = 3 waves: slots 32/3 = 10 WGs → 30 waves; busiest SIMD ceil(30/4) = 8; 30/32.
  {"gfx90a_three_wave_workgroups_leave_slots_empty", "gfx90a", {.block_size = 192, .vgprs = 32}, 8, 10, 0.9375, lim::waves},
  // 1024 threads = 16 waves = 4 per SIMD, but 168 VGPRs (a multiple of 8) allow 512/168 = 3 → 4×3/16 = 0 WGs.
  {"gfx90a_workgroup_does_not_fit_the_vgprs", "gfx90a", {.block_size = 1024, .vgprs = 168}, 0, 0, 0.0, lim::vgprs},
  // 2048 threads > 1024 → cannot launch.
  {"gfx90a_block_too_large", "gfx90a", {.block_size = 2048, .vgprs = 32}, 0, 0, 0.0, lim::block_size},
  // 65537 B > 64 KiB per workgroup → cannot launch.
  {"gfx90a_lds_over_64_kib", "gfx90a", {.block_size = 256, .vgprs = 32, .lds_bytes = 65537}, 0, 0, 0.0, lim::lds},

  // ---- gfx940 (CDNA3, same rules as gfx942).
  // 256 VGPR → 512/256 = 2/SIMD; w = 1 → 4×2 = 8 WGs → 8 waves → 2/SIMD, 8/32.
  {"gfx940_256_vgprs_one_wave_groups", "gfx940", {.block_size = 64, .vgprs = 256}, 2, 8, 0.25, lim::vgprs},
  // 256 + 256 AGPR = 512 → 1/SIMD → 4×1/4 = 1 WG → 4 waves → 1/SIMD.
  {"gfx940_full_unified_file", "gfx940", {.block_size = 256, .vgprs = 256, .agprs = 256}, 1, 1, 0.125, lim::vgprs},
  // 1024 threads = 16 waves, no other use → 32/16 = 2 WGs → 32 waves: full.
  {"gfx940_1024_threads_fill_the_cu", "gfx940", {.block_size = 1024}, 8, 2, 1.0, lim::waves},

  // ---- gfx942 (CDNA3).
  // 96 VGPR → 512/96 = 5/SIMD → w = 8 → 4×5/8 = 2 WGs; 32 KiB LDS → 2 WGs: a tie (VGPRs named first).
  {"gfx942_vgprs_and_lds_tie", "gfx942", {.block_size = 512, .vgprs = 96, .lds_bytes = 32768}, 4, 2, 0.5, lim::vgprs},
  // 300 AGPRs > 256 per wave → cannot launch.
  {"gfx942_too_many_agprs", "gfx942", {.block_size = 256, .vgprs = 64, .agprs = 300}, 0, 0, 0.0, lim::vgprs},
  // 110 SGPRs > 102 + 6 extras = 108 → cannot launch.
  {"gfx942_too_many_sgprs", "gfx942", {.block_size = 256, .vgprs = 64, .sgprs = 110}, 0, 0, 0.0, lim::sgprs},
  // 100 SGPRs → 8/SIMD: no limit; 64 VGPRs → 8; w = 4 → 8 WGs → 32 waves: full.
  {"gfx942_100_sgprs_do_not_bite", "gfx942", {.block_size = 256, .vgprs = 64, .sgprs = 100}, 8, 8, 1.0, lim::waves},

  // ---- gfx950 (CDNA4): gfx942 rules, 160 KiB LDS per CU and per workgroup.
  // 64 KiB LDS → 163840/65536 = 2 WGs → 8 waves → 2/SIMD (gfx942 would fit 1).
  {"gfx950_64_kib_lds", "gfx950", {.block_size = 256, .vgprs = 64, .lds_bytes = 65536}, 2, 2, 0.25, lim::lds},
  // 40 KiB → 163840/40960 = 4 WGs → 16 waves → 4/SIMD.
  {"gfx950_40_kib_lds", "gfx950", {.block_size = 256, .vgprs = 64, .lds_bytes = 40960}, 4, 4, 0.5, lim::lds},
  // 160 KiB + 1 B > 160 KiB per workgroup → cannot launch.
  {"gfx950_lds_over_160_kib", "gfx950", {.block_size = 256, .vgprs = 64, .lds_bytes = 163841}, 0, 0, 0.0, lim::lds},
  // 128 + 128 AGPR = 256 → 2/SIMD → 2 WGs → 8 waves.
  {"gfx950_agprs_share_the_file", "gfx950", {.block_size = 256, .vgprs = 128, .agprs = 128}, 2, 2, 0.25, lim::vgprs},

  // ---- gfx1030 (RDNA2), WGP mode: 4 SIMDs × 16 slots; wave32 1024/16, wave64 512/8; 128 KiB LDS
  //      per WGP, ≤ 64 KiB per workgroup; 32 barriers.
  // wave32 128 VGPR → 1024/128 = 8/SIMD; w = 8 → 4×8/8 = 4 WGs → 32 waves → 8/SIMD, 32/64.
  {"gfx1030_wave32_128_vgprs", "gfx1030", {.block_size = 256, .vgprs = 128}, 8, 4, 0.5, lim::vgprs},
  // wave32 256 VGPR → 1024/256 = 4 → 4×4/8 = 2 WGs → 16 waves → 4/SIMD.
  {"gfx1030_wave32_256_vgprs", "gfx1030", {.block_size = 256, .vgprs = 256}, 4, 2, 0.25, lim::vgprs},
  // wave64 halves the file: 512/128 = 4; w = 4 → 4×4/4 = 4 WGs → 16 waves → 4/SIMD, 16/64.
  {"gfx1030_wave64_128_vgprs", "gfx1030", {.block_size = 256, .vgprs = 128, .wave_size = 64}, 4, 4, 0.25, lim::vgprs},
  // 32 KiB LDS → 131072/32768 = 4 WGs → 32 waves → 8/SIMD.
  {"gfx1030_32_kib_lds_per_wgp", "gfx1030", {.block_size = 256, .vgprs = 32, .lds_bytes = 32768}, 8, 4, 0.5, lim::lds},
  // 64 KiB + 1 B > 64 KiB per workgroup (though the WGP has 128 KiB) → cannot launch.
  {"gfx1030_lds_over_64_kib", "gfx1030", {.block_size = 256, .vgprs = 32, .lds_bytes = 65537}, 0, 0, 0.0, lim::lds},
  // 64 threads = 2 wave32 waves: slots 64/2 = 32 WGs, barriers 32 WGs → 64 waves: full (tie).
  {"gfx1030_two_wave_groups_fill_slots_and_barriers", "gfx1030", {.block_size = 64, .vgprs = 16}, 16, 32, 1.0, lim::waves},
  // 200 SGPRs > 106 per wave → cannot launch (SGPRs never limit below that on gfx10+).
  {"gfx1030_too_many_sgprs", "gfx1030", {.block_size = 256, .vgprs = 32, .sgprs = 200}, 0, 0, 0.0, lim::sgprs},

  // ---- gfx1100 (RDNA3, FeatureGFX11FullVGPRs): wave32 1536/24, wave64 768/12.
  // 96 VGPR → 1536/96 = 16: full.
  {"gfx1100_96_vgprs_fill_the_simd", "gfx1100", {.block_size = 256, .vgprs = 96}, 16, 8, 1.0, lim::waves},
  // 97 → 120 → 1536/120 = 12 → 4×12/8 = 6 WGs → 48 waves → 12/SIMD.
  {"gfx1100_97_vgprs", "gfx1100", {.block_size = 256, .vgprs = 97}, 12, 6, 0.75, lim::vgprs},
  // 121 → 144 → 1536/144 = 10 → 4×10/8 = 5 WGs → 40 waves → 10/SIMD.
  {"gfx1100_121_vgprs", "gfx1100", {.block_size = 256, .vgprs = 121}, 10, 5, 0.625, lim::vgprs},
  // wave64: 128 → alignTo(128, 12) = 132 → 768/132 = 5; w = 4 → 5 WGs → 20 waves → 5/SIMD.
  {"gfx1100_wave64_128_vgprs", "gfx1100", {.block_size = 256, .vgprs = 128, .wave_size = 64}, 5, 5, 0.3125, lim::vgprs},
  // 1024 threads = 32 waves = 8 per SIMD; 256 → 264 VGPRs allow 1536/264 = 5 → 4×5/32 = 0.
  {"gfx1100_big_workgroup_does_not_fit", "gfx1100", {.block_size = 1024, .vgprs = 256}, 0, 0, 0.0, lim::vgprs},

  // ---- sm_90 (cuda_occupancy.h; 64 warps, 32 blocks, 65536 regs in 4 sub-partitions, 228 KiB).
  // 32 regs → 1024/warp → 16384/1024 = 16 warps per sub-partition → 64; 8 warps/block → 8 blocks.
  {"sm_90_256_threads_32_regs", "sm_90", {.block_size = 256, .vgprs = 32}, 64, 8, 1.0, lim::waves},
  // 64 regs → 2048/warp → 8 per sub-partition → 32 warps → 4 blocks → 32 warps.
  {"sm_90_256_threads_64_regs", "sm_90", {.block_size = 256, .vgprs = 64}, 32, 4, 0.5, lim::registers},
  // 255 regs → 8160 → 8192/warp → 2 per sub-partition → 8 warps → 8/4 = 2 blocks → 8 warps.
  {"sm_90_128_threads_255_regs", "sm_90", {.block_size = 128, .vgprs = 255}, 8, 2, 0.125, lim::registers},
  // 1024 threads × 64 regs = 65536 = the per-block file → 1 block → 32 warps.
  {"sm_90_1024_threads_64_regs", "sm_90", {.block_size = 1024, .vgprs = 64}, 32, 1, 0.5, lim::registers},
  // 1024 threads × 255 regs: 32 warps × 8192 > 65536 per block → cannot launch.
  {"sm_90_1024_threads_255_regs", "sm_90", {.block_size = 1024, .vgprs = 255}, 0, 0, 0.0, lim::registers},
  // 256 regs > 255 per thread → cannot launch.
  {"sm_90_256_regs", "sm_90", {.block_size = 128, .vgprs = 256}, 0, 0, 0.0, lim::registers},
  // 56 KiB + 1 KiB reserved = 58368 → 233472/58368 = 4 blocks → 16 warps (measured on H200: 4).
  {"sm_90_56_kib_shared", "sm_90", {.block_size = 128, .vgprs = 32, .lds_bytes = 57344}, 16, 4, 0.25, lim::shared_memory},
  // 56.5 KiB + 1 KiB = 58880 → 3 blocks (measured: 3; proves the reservation counts).
  {"sm_90_56_5_kib_shared", "sm_90", {.block_size = 128, .vgprs = 32, .lds_bytes = 57856}, 12, 3, 0.1875, lim::shared_memory},
  // 113 KiB + 1 KiB = 116736 → 2 blocks exactly (measured: 2).
  {"sm_90_113_kib_shared", "sm_90", {.block_size = 128, .vgprs = 32, .lds_bytes = 115712}, 8, 2, 0.125, lim::shared_memory},
  // 114 KiB + 1 KiB = 117760 → 1 block (measured: 1).
  {"sm_90_114_kib_shared", "sm_90", {.block_size = 128, .vgprs = 32, .lds_bytes = 116736}, 4, 1, 0.0625, lim::shared_memory},
  // 227 KiB + 1 KiB = 228 KiB: the opt-in maximum, 1 block.
  {"sm_90_227_kib_shared", "sm_90", {.block_size = 128, .vgprs = 32, .lds_bytes = 232448}, 4, 1, 0.0625, lim::shared_memory},
  // 227 KiB + 1 B → rounded 233600 > 233472 → cannot launch.
  {"sm_90_shared_over_227_kib", "sm_90", {.block_size = 128, .vgprs = 32, .lds_bytes = 232449}, 0, 0, 0.0, lim::shared_memory},
  // 1-warp blocks: warps allow 64 blocks, the SM 32 → 32 warps.
  {"sm_90_one_warp_blocks", "sm_90", {.block_size = 32, .vgprs = 32}, 32, 32, 0.5, lim::workgroups},
  // 640 threads = 20 warps → 64/20 = 3 blocks → 60 warps.
  {"sm_90_20_warp_blocks", "sm_90", {.block_size = 640, .vgprs = 32}, 60, 3, 0.9375, lim::waves},
  // 1025 threads > 1024 → cannot launch.
  {"sm_90_block_too_large", "sm_90", {.block_size = 1025, .vgprs = 32}, 0, 0, 0.0, lim::block_size},
  // Carveout 64 KiB: 16 KiB + 1 KiB = 17408 → 65536/17408 = 3 blocks → 24 warps.
  {"sm_90_small_carveout", "sm_90", {.block_size = 256, .vgprs = 32, .lds_bytes = 16384, .shared_memory_carveout_bytes = 65536}, 24, 3, 0.375, lim::shared_memory},

  // ---- sm_80 (CC 8.0: 64 warps, 32 blocks, 164 KiB per SM, 163 KiB per block).
  {"sm_80_256_threads_32_regs", "sm_80", {.block_size = 256, .vgprs = 32}, 64, 8, 1.0, lim::waves},
  // 48 KiB + 1 KiB = 50176 → 167936/50176 = 3 blocks → 24 warps.
  {"sm_80_48_kib_shared", "sm_80", {.block_size = 256, .vgprs = 32, .lds_bytes = 49152}, 24, 3, 0.375, lim::shared_memory},
  // 163 KiB + 1 KiB = 164 KiB → 1 block → 8 warps.
  {"sm_80_163_kib_shared", "sm_80", {.block_size = 256, .vgprs = 32, .lds_bytes = 166912}, 8, 1, 0.125, lim::shared_memory},
  // 163 KiB + 1 B → over the opt-in limit.
  {"sm_80_shared_over_163_kib", "sm_80", {.block_size = 256, .vgprs = 32, .lds_bytes = 166913}, 0, 0, 0.0, lim::shared_memory},
  // 128 regs → 4096/warp → 4 per sub-partition → 16 warps → 4 blocks of 4 warps.
  {"sm_80_128_regs", "sm_80", {.block_size = 128, .vgprs = 128}, 16, 4, 0.25, lim::registers},
  // 1-warp blocks → 32 blocks → 32 warps.
  {"sm_80_one_warp_blocks", "sm_80", {.block_size = 32, .vgprs = 16}, 32, 32, 0.5, lim::workgroups},
  // 2048 threads > 1024.
  {"sm_80_block_too_large", "sm_80", {.block_size = 2048, .vgprs = 16}, 0, 0, 0.0, lim::block_size},
};
// clang-format on

class stages_occupancy_model_cases : public ::testing::TestWithParam<occupancy_case> {};

TEST_P(stages_occupancy_model_cases, matches_the_hand_computation) {
  const occupancy_case& c = GetParam();
  const occupancy_result r = compute_occupancy(load_arch(c.target), c.kernel);
  EXPECT_EQ(r.active_waves_per_simd, c.waves_per_simd);
  EXPECT_EQ(r.active_workgroups_per_cu, c.workgroups);
  EXPECT_DOUBLE_EQ(r.occupancy, c.occupancy);
  EXPECT_EQ(to_string(r.limiter), std::string(to_string(c.limiter)));
  if (c.occupancy < 1.0)
    EXPECT_FALSE(r.suggestions.empty()) << "a limited kernel gets a suggestion";
  else
    EXPECT_TRUE(r.suggestions.empty());
}

INSTANTIATE_TEST_SUITE_P(hand_computed,
                         stages_occupancy_model_cases,
                         ::testing::ValuesIn(occupancy_cases),
                         [](const ::testing::TestParamInfo<occupancy_case>& p) {
                           return std::string(p.param.name);
                         });

TEST(stages_occupancy_model, cases_cover_every_target_and_limiter) {
  std::map<std::string, int> per_target;
  std::set<std::string> limiters;
  for (const occupancy_case& c : occupancy_cases) {
    ++per_target[c.target];
    limiters.insert(to_string(c.limiter));
  }
  EXPECT_GE(occupancy_cases.size(), 30u);
  for (const std::string& target : known_targets())
    EXPECT_GE(per_target[target], 3) << target;
  for (const char* name :
       {"waves", "vgprs", "sgprs", "lds", "workgroups", "registers", "shared_memory", "block_size"})
    EXPECT_TRUE(limiters.count(name)) << name;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list)
    out += "\n  " + s;
  return out;
}

TEST(stages_occupancy_model, limit_by_resource_gives_each_resource_alone) {
  const occupancy_result amd =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 256, .vgprs = 128, .lds_bytes = 32768});
  // VGPRs 4/SIMD; LDS 65536/32768 = 2 WGs × 4 waves / 4 SIMDs = 2; slots, SGPRs, barriers 8.
  EXPECT_EQ(amd.limit_by_resource,
            (std::map<std::string, std::uint32_t>{
                {"waves", 8}, {"vgprs", 4}, {"sgprs", 8}, {"lds", 2}, {"barriers", 8}}));
  EXPECT_EQ(amd.limiter, lim::lds);
  EXPECT_EQ(amd.unit, "waves per SIMD");
  EXPECT_EQ(amd.max_waves_per_simd, 8u);
  EXPECT_EQ(amd.max_waves_per_cu, 32u);
  EXPECT_EQ(amd.active_waves_per_cu, 8u);

  const occupancy_result nv =
      compute_occupancy(load_arch("sm_90"), {.block_size = 256, .vgprs = 64});
  // 32 blocks × 8 warps caps at 64; registers 32; shared memory 228 blocks (the 1 KiB reservation).
  EXPECT_EQ(nv.limit_by_resource,
            (std::map<std::string, std::uint32_t>{
                {"waves", 64}, {"workgroups", 64}, {"registers", 32}, {"shared_memory", 64}}));
  EXPECT_EQ(nv.unit, "warps per SM");
  EXPECT_EQ(nv.max_waves_per_simd, 64u);
}

TEST(stages_occupancy_model, barriers_match_the_slots_of_two_wave_workgroups) {
  // 16 barriers × 2 waves = 32 = the CU's slots, so barriers never bind alone on CDNA; the
  // limiter is then the slots. A 1-wave workgroup uses no barrier.
  const occupancy_result two =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 128, .vgprs = 32});
  EXPECT_EQ(two.limit_by_resource.at("barriers"), 8u);
  EXPECT_EQ(two.active_workgroups_per_cu, 16u);
  EXPECT_EQ(two.limiter, lim::waves);
  const occupancy_result one =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 64, .vgprs = 32});
  EXPECT_EQ(one.active_workgroups_per_cu, 32u);
  const occupancy_result wgp =
      compute_occupancy(load_arch("gfx1030"), {.block_size = 64, .vgprs = 16});
  EXPECT_EQ(wgp.limit_by_resource.at("barriers"), 16u);
}

TEST(stages_occupancy_model, vgpr_suggestions_walk_the_granules) {
  const occupancy_result r =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 256, .vgprs = 128});
  // 120, 112, 104 still give 4 (512/104 = 4); 96 gives 5; 64 gives 8.
  EXPECT_TRUE(contains(r.suggestions, "with at most 96 VGPRs: 5 waves per SIMD (62.5%)"))
      << joined(r.suggestions);
  EXPECT_TRUE(contains(r.suggestions, "with at most 64 VGPRs: 8 waves per SIMD (100%)"))
      << joined(r.suggestions);
}

TEST(stages_occupancy_model, code_object_vgpr_count_is_already_the_unified_total) {
  // hipcc (ROCm 5.2) for gfx90a: v0..v36 and a0..a39 → .vgpr_count 80 = alignTo(37, 4) + 40,
  // .agpr_count 40. 80 → 512/80 = 6 waves/SIMD either way; adding the 40 AGPRs again would give
  // 120 → 4.
  const arch_model arch = load_arch("gfx90a");
  const occupancy_result split =
      compute_occupancy(arch, {.block_size = 256, .vgprs = 37, .agprs = 40});
  const occupancy_result total = compute_occupancy(
      arch, {.block_size = 256, .vgprs = 80, .agprs = 40, .vgprs_include_agprs = true});
  const occupancy_result total_alone = compute_occupancy(arch, {.block_size = 256, .vgprs = 80});
  EXPECT_EQ(split.active_waves_per_simd, 6u);
  EXPECT_EQ(total.active_waves_per_simd, 6u);
  EXPECT_EQ(total_alone.active_waves_per_simd, 6u);
  EXPECT_EQ(total.suggestions, split.suggestions);
  EXPECT_EQ(
      compute_occupancy(arch, {.block_size = 256, .vgprs = 80, .agprs = 40}).active_waves_per_simd,
      4u);
  // The arch part of a given total is checked against 256: 300 total with 40 AGPRs has 260.
  EXPECT_EQ(compute_occupancy(
                arch, {.block_size = 256, .vgprs = 300, .agprs = 40, .vgprs_include_agprs = true})
                .active_waves_per_simd,
            0u);
}

TEST(stages_occupancy_model, agpr_suggestions_speak_of_the_unified_footprint) {
  const occupancy_result r =
      compute_occupancy(load_arch("gfx942"), {.block_size = 256, .vgprs = 128, .agprs = 128});
  // 256 → 2; 168 → 512/168 = 3; 128 → 4 … 64 → 8.
  EXPECT_TRUE(
      contains(r.suggestions,
               "with a VGPR+AGPR footprint of at most 168 per lane: 3 waves per SIMD (37.5%)"))
      << joined(r.suggestions);
  EXPECT_TRUE(contains(
      r.suggestions, "with a VGPR+AGPR footprint of at most 64 per lane: 8 waves per SIMD (100%)"))
      << joined(r.suggestions);
}

TEST(stages_occupancy_model, lds_suggestions_walk_the_512_byte_granules) {
  const occupancy_result r =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 256, .vgprs = 32, .lds_bytes = 16384});
  // 5 WGs need ≤ 65536/5 = 13107 → 12800 B (25 granules); 8 WGs need 8 KiB.
  EXPECT_TRUE(
      contains(r.suggestions, "with at most 12.5 KiB LDS per workgroup: 5 waves per SIMD (62.5%)"))
      << joined(r.suggestions);
  EXPECT_TRUE(
      contains(r.suggestions, "with at most 8 KiB LDS per workgroup: 8 waves per SIMD (100%)"))
      << joined(r.suggestions);
}

TEST(stages_occupancy_model, sgpr_suggestion_names_the_step) {
  const occupancy_result r =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 256, .vgprs = 32, .sgprs = 102});
  EXPECT_EQ(r.suggestions,
            std::vector<std::string>{"with at most 100 SGPRs: 8 waves per SIMD (100%)"});
}

TEST(stages_occupancy_model, block_size_suggestions) {
  const occupancy_result slots =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 192, .vgprs = 32});
  EXPECT_EQ(slots.suggestions,
            std::vector<std::string>{"with 128 threads per workgroup: 8 waves per SIMD (100%)"});

  const occupancy_result big =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 2048, .vgprs = 32});
  EXPECT_EQ(
      big.suggestions,
      (std::vector<std::string>{"a workgroup of 2048 threads exceeds the maximum of 1024 on gfx90a",
                                "with 1024 threads per workgroup: 8 waves per SIMD (100%)"}));

  const occupancy_result blocks =
      compute_occupancy(load_arch("sm_90"), {.block_size = 32, .vgprs = 32});
  EXPECT_EQ(blocks.suggestions,
            std::vector<std::string>{"with 64 threads per block: 64 warps per SM (100%)"});

  const occupancy_result nv_big =
      compute_occupancy(load_arch("sm_90"), {.block_size = 1025, .vgprs = 32});
  EXPECT_EQ(nv_big.suggestions, (std::vector<std::string>{
                                    "a block of 1025 threads exceeds the maximum of 1024 on sm_90",
                                    "with 1024 threads per block: 64 warps per SM (100%)"}));
}

TEST(stages_occupancy_model, refused_lds_explains_and_suggests) {
  const occupancy_result r =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 256, .vgprs = 32, .lds_bytes = 65537});
  ASSERT_GE(r.suggestions.size(), 2u);
  EXPECT_EQ(
      r.suggestions[0],
      "LDS of 65537 bytes per workgroup exceeds the 64 KiB a workgroup may allocate on gfx90a");
  EXPECT_EQ(r.suggestions[1], "with at most 64 KiB LDS per workgroup: 1 wave per SIMD (12.5%)");
}

TEST(stages_occupancy_model, refused_workgroup_names_the_per_simd_need) {
  const occupancy_result r =
      compute_occupancy(load_arch("gfx90a"), {.block_size = 1024, .vgprs = 168});
  ASSERT_FALSE(r.suggestions.empty());
  EXPECT_EQ(r.suggestions[0],
            "a workgroup of 16 waves needs 4 waves per SIMD but 168 VGPRs allow only 3");
  // 128 VGPRs → 4 per SIMD → the 16-wave workgroup fits once.
  EXPECT_TRUE(contains(r.suggestions, "with at most 128 VGPRs: 4 waves per SIMD (50%)"))
      << joined(r.suggestions);
}

TEST(stages_occupancy_model, tied_resources_say_so) {
  const occupancy_result r =
      compute_occupancy(load_arch("gfx942"), {.block_size = 512, .vgprs = 96, .lds_bytes = 32768});
  EXPECT_EQ(r.suggestions,
            std::vector<std::string>{"lds and vgprs each limit occupancy to 4 waves per SIMD; only "
                                     "lowering all of them raises it"});
}

TEST(stages_occupancy_model, nvidia_register_suggestions_walk_the_allocation_units) {
  const occupancy_result r =
      compute_occupancy(load_arch("sm_90"), {.block_size = 256, .vgprs = 64});
  // 49–55 regs still round to 1792/warp (9 per sub-partition → 36 warps → 4 blocks); 48 → 1536 →
  // 10 → 40 warps → 5 blocks; 32 → 16 → 64 warps.
  EXPECT_EQ(r.suggestions, (std::vector<std::string>{
                               "with at most 48 registers per thread: 40 warps per SM (62.5%)",
                               "with at most 32 registers per thread: 64 warps per SM (100%)"}));

  const occupancy_result refused =
      compute_occupancy(load_arch("sm_90"), {.block_size = 1024, .vgprs = 255});
  EXPECT_EQ(
      refused.suggestions,
      (std::vector<std::string>{"a block of 32 warps at 8192 registers per warp exceeds the 65536 "
                                "registers a block may use on sm_90",
                                "with at most 64 registers per thread: 32 warps per SM (50%)",
                                "with at most 32 registers per thread: 64 warps per SM (100%)"}));
}

TEST(stages_occupancy_model, nvidia_shared_memory_suggestions_count_the_reservation) {
  const occupancy_result r =
      compute_occupancy(load_arch("sm_90"), {.block_size = 128, .vgprs = 32, .lds_bytes = 57856});
  // 4 blocks need ≤ 233472/4 = 58368 per block, less 1 KiB reserved = 56 KiB.
  ASSERT_FALSE(r.suggestions.empty());
  EXPECT_EQ(r.suggestions[0], "with at most 56 KiB shared memory per block: 16 warps per SM (25%)");
  // 16 blocks (the warp limit) need ≤ 14592 per block: 13568 B of the kernel's own.
  EXPECT_EQ(r.suggestions.back(),
            "with at most 13568 bytes shared memory per block: 64 warps per SM (100%)");
}

TEST(stages_occupancy_model, nvidia_small_carveout_suggests_the_maximum) {
  const occupancy_result r = compute_occupancy(
      load_arch("sm_90"),
      {.block_size = 256, .vgprs = 32, .lds_bytes = 16384, .shared_memory_carveout_bytes = 65536});
  EXPECT_TRUE(contains(r.suggestions,
                       "with the maximum shared-memory carveout (228 KiB): 64 warps per SM (100%)"))
      << joined(r.suggestions);
  // A carveout below one block is raised to the smallest that holds it (8 KiB for the 1 KiB
  // reservation alone), as cuda_occupancy.h does.
  const occupancy_result zero = compute_occupancy(
      load_arch("sm_90"), {.block_size = 32, .vgprs = 32, .shared_memory_carveout_bytes = 0});
  EXPECT_EQ(zero.active_workgroups_per_cu, 8u);
  EXPECT_EQ(zero.limiter, lim::shared_memory);
}

TEST(stages_occupancy_model, full_occupancy_has_no_suggestions) {
  EXPECT_TRUE(
      compute_occupancy(load_arch("gfx942"), {.block_size = 256, .vgprs = 64}).suggestions.empty());
  EXPECT_TRUE(
      compute_occupancy(load_arch("sm_80"), {.block_size = 256, .vgprs = 32}).suggestions.empty());
}

TEST(stages_occupancy_model, scratch_does_not_change_occupancy) {
  const arch_model arch = load_arch("gfx90a");
  EXPECT_DOUBLE_EQ(
      compute_occupancy(arch, {.block_size = 256, .vgprs = 64, .scratch_bytes = 4096}).occupancy,
      compute_occupancy(arch, {.block_size = 256, .vgprs = 64}).occupancy);
}

TEST(stages_occupancy_model, default_wave_size_comes_from_the_arch) {
  EXPECT_EQ(compute_occupancy(load_arch("gfx1030"), {.block_size = 256}).wave_size, 32u);
  EXPECT_EQ(compute_occupancy(load_arch("gfx90a"), {.block_size = 256}).wave_size, 64u);
  EXPECT_EQ(compute_occupancy(load_arch("sm_90"), {.block_size = 256}).wave_size, 32u);
}

TEST(stages_occupancy_model, an_unsupported_wave_size_is_an_error_with_a_fix) {
  try {
    compute_occupancy(load_arch("gfx90a"), {.block_size = 256, .wave_size = 32});
    FAIL() << "expected arch_error";
  } catch (const arch_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gfx90a has no wave size 32; fix: use 64 (or 0 for the default, 64)");
  }
}

#ifdef RPL_HAVE_CUDA_OCCUPANCY
/// Blocks per SM from cuda_occupancy.h with the device properties our models hold (opt-in shared
/// memory, default carveout, one barrier).
int cuda_blocks(const arch_model& arch, int major, const kernel_resources& k) {
  const nvidia_limits& m = *arch.nvidia;
  cudaOccDeviceProp p;
  p.computeMajor = major;
  p.computeMinor = 0;
  p.maxThreadsPerBlock = static_cast<int>(m.max_threads_per_block);
  p.maxThreadsPerMultiprocessor = static_cast<int>(m.max_warps_per_sm * 32);
  p.regsPerBlock = static_cast<int>(m.registers_per_block);
  p.regsPerMultiprocessor = static_cast<int>(m.registers_per_sm);
  p.warpSize = 32;
  p.sharedMemPerBlock = m.default_max_shared_memory_per_block_bytes;
  p.sharedMemPerMultiprocessor = m.shared_memory_per_sm_bytes;
  p.numSms = 1;
  p.sharedMemPerBlockOptin = m.max_shared_memory_per_block_bytes;
  p.reservedSharedMemPerBlock = m.reserved_shared_memory_per_block_bytes;
  cudaOccFuncAttributes a;
  a.maxThreadsPerBlock = static_cast<int>(m.max_threads_per_block);
  a.numRegs = static_cast<int>(k.vgprs);
  a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  a.maxDynamicSharedSizeBytes = m.max_shared_memory_per_block_bytes;
  a.numBlockBarriers = 1;
  cudaOccDeviceState state;
  cudaOccResult result;
  if (cudaOccMaxActiveBlocksPerMultiprocessor(
          &result, &p, &a, &state, static_cast<int>(k.block_size), k.lds_bytes) != CUDA_OCC_SUCCESS)
    return -1;
  return result.activeBlocksPerMultiprocessor;
}

TEST(stages_occupancy_model, nvidia_rules_agree_with_cuda_occupancy_h) {
  for (const auto& [target, major] : {std::pair{"sm_80", 8}, std::pair{"sm_90", 9}}) {
    const arch_model arch = load_arch(target);
    int compared = 0;
    for (const std::uint32_t block : {32u, 64u, 96u, 160u, 256u, 384u, 640u, 768u, 1024u})
      for (const std::uint32_t regs :
           {0u, 16u, 32u, 40u, 48u, 56u, 64u, 96u, 128u, 168u, 200u, 255u})
        for (const std::uint64_t smem :
             {0ull, 1ull, 16384ull, 49152ull, 57856ull, 116736ull, 166912ull, 232448ull}) {
          const kernel_resources k{.block_size = block, .vgprs = regs, .lds_bytes = smem};
          SCOPED_TRACE(std::string(target) + " block " + std::to_string(block) + " regs " +
                       std::to_string(regs) + " smem " + std::to_string(smem));
          const int expected = cuda_blocks(arch, major, k);
          const occupancy_result r = compute_occupancy(arch, k);
          EXPECT_EQ(static_cast<int>(r.active_workgroups_per_cu), std::max(expected, 0));
          ++compared;
        }
    EXPECT_EQ(compared, 9 * 12 * 8);
  }
}
#endif

TEST(stages_occupancy_model, limiter_names) {
  EXPECT_STREQ(to_string(lim::waves), "waves");
  EXPECT_STREQ(to_string(lim::vgprs), "vgprs");
  EXPECT_STREQ(to_string(lim::sgprs), "sgprs");
  EXPECT_STREQ(to_string(lim::lds), "lds");
  EXPECT_STREQ(to_string(lim::workgroups), "workgroups");
  EXPECT_STREQ(to_string(lim::barriers), "barriers");
  EXPECT_STREQ(to_string(lim::registers), "registers");
  EXPECT_STREQ(to_string(lim::shared_memory), "shared_memory");
  EXPECT_STREQ(to_string(lim::block_size), "block_size");
}

} // namespace
} // namespace rpl::stages
