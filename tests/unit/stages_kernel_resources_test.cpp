// The kernel-resources rule (stages/hardware/kernel_resources.hpp): each source's factory, and the
// same kernel described by a code object and by a rocpd symbol giving the same registers and the
// same occupancy.

#include <gtest/gtest.h>

#include "stages/hardware/code_object_metadata.hpp"
#include "stages/hardware/kernel_resources.hpp"
#include "stages/hardware/occupancy_model.hpp"
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages {
namespace {

/// A kernel as hipcc's metadata note describes it: `.vgpr_count` is the unified total.
kernel_metadata code_object_kernel(std::uint32_t unified_vgprs, std::uint32_t agprs) {
  kernel_metadata k;
  k.name = "_Z4gemmPf";
  k.vgpr_count = unified_vgprs;
  k.agpr_count = agprs;
  k.sgpr_count = 40;
  k.group_segment_fixed_size = 8192;
  k.private_segment_fixed_size = 16;
  k.wavefront_size = 64;
  return k;
}

/// The same kernel as rocprofv3 records its symbol: arch VGPRs and AGPRs apart.
rocpd::kernel_symbol_row rocpd_symbol(std::int64_t arch_vgprs, std::int64_t agprs) {
  rocpd::kernel_symbol_row s;
  s.kernel_name = "_Z4gemmPf";
  s.arch_vgpr_count = arch_vgprs;
  s.accum_vgpr_count = agprs;
  s.sgpr_count = 40;
  s.group_segment_size = 8192;
  s.private_segment_size = 16;
  return s;
}

TEST(stages_kernel_resources, code_object_factory_counts_agprs_inside_the_vgpr_total) {
  const auto r = kernel_resources::from_code_object(code_object_kernel(80, 40), 256);
  EXPECT_EQ(r.block_size, 256u);
  EXPECT_EQ(r.vgprs, 80u);
  EXPECT_EQ(r.agprs, 40u);
  EXPECT_TRUE(r.vgprs_include_agprs);
  EXPECT_EQ(r.sgprs, 40u);
  EXPECT_EQ(r.lds_bytes, 8192u);
  EXPECT_EQ(r.scratch_bytes, 16u);
  EXPECT_EQ(r.wave_size, 64u);
}

TEST(stages_kernel_resources, rocpd_factory_adds_agprs_on_top_and_takes_the_larger_lds) {
  const auto r = kernel_resources::from_rocpd_symbol(rocpd_symbol(37, 40), 128, 24576);
  EXPECT_EQ(r.block_size, 128u);
  EXPECT_EQ(r.vgprs, 37u);
  EXPECT_EQ(r.agprs, 40u);
  EXPECT_FALSE(r.vgprs_include_agprs);
  EXPECT_EQ(r.sgprs, 40u);
  EXPECT_EQ(r.lds_bytes, 24576u); // the dispatch's, dynamic LDS included
  EXPECT_EQ(r.scratch_bytes, 16u);
  EXPECT_EQ(r.wave_size, 0u); // the architecture's default
  // A dispatch that reports less than the symbol's static LDS (or none) keeps the static part.
  EXPECT_EQ(kernel_resources::from_rocpd_symbol(rocpd_symbol(37, 40), 128, 0).lds_bytes, 8192u);
}

TEST(stages_kernel_resources, both_amd_sources_give_the_same_footprint) {
  const auto arch = load_arch("gfx90a"); // kept: a reference into a temporary would dangle
  const amd_limits& gfx90a = *arch.amd;
  // 37 arch VGPRs align to 40, then 40 AGPRs: hipcc writes .vgpr_count 80.
  EXPECT_EQ(
      vgpr_footprint(gfx90a, kernel_resources::from_code_object(code_object_kernel(80, 40), 256)),
      80u);
  EXPECT_EQ(
      vgpr_footprint(gfx90a, kernel_resources::from_rocpd_symbol(rocpd_symbol(37, 40), 256, 0)),
      80u);
  // 61 arch VGPRs align to 64, then 67 AGPRs: 131.
  EXPECT_EQ(
      vgpr_footprint(gfx90a, kernel_resources::from_code_object(code_object_kernel(131, 67), 64)),
      131u);
  EXPECT_EQ(
      vgpr_footprint(gfx90a, kernel_resources::from_rocpd_symbol(rocpd_symbol(61, 67), 64, 0)),
      131u);
  // Without AGPRs the VGPR count is the footprint either way.
  EXPECT_EQ(
      vgpr_footprint(gfx90a, kernel_resources::from_code_object(code_object_kernel(96, 0), 64)),
      96u);
  EXPECT_EQ(vgpr_footprint(gfx90a, kernel_resources::from_rocpd_symbol(rocpd_symbol(96, 0), 64, 0)),
            96u);
}

TEST(stages_kernel_resources, both_amd_sources_give_the_same_occupancy) {
  for (const char* target : {"gfx90a", "gfx942"}) {
    SCOPED_TRACE(target);
    const arch_model arch = load_arch(target);
    const occupancy_result from_code_object = compute_occupancy(
        arch, kernel_resources::from_code_object(code_object_kernel(80, 40), 256));
    const occupancy_result from_rocpd =
        compute_occupancy(arch, kernel_resources::from_rocpd_symbol(rocpd_symbol(37, 40), 256, 0));
    // 512 / 80 = 6 waves per SIMD; counting the 40 AGPRs twice (120) would give 4.
    EXPECT_EQ(from_code_object.active_waves_per_simd, 6u);
    EXPECT_EQ(from_rocpd.active_waves_per_simd, 6u);
    EXPECT_EQ(from_code_object.limiter, occupancy_limiter::vgprs);
    EXPECT_EQ(from_rocpd.limiter, occupancy_limiter::vgprs);
    EXPECT_DOUBLE_EQ(from_code_object.occupancy, from_rocpd.occupancy);
    EXPECT_EQ(from_code_object.limit_by_resource, from_rocpd.limit_by_resource);
    EXPECT_EQ(from_code_object.suggestions, from_rocpd.suggestions);
  }
}

TEST(stages_kernel_resources, nvidia_registers_and_a_cupti_rocpd_symbol_agree) {
  // Our CUPTI tracer stores registers per thread in arch_vgpr_count and no AGPRs.
  rocpd::kernel_symbol_row cupti;
  cupti.arch_vgpr_count = 64;
  cupti.group_segment_size = 0;
  const auto from_trace = kernel_resources::from_rocpd_symbol(cupti, 256, 8192);
  const auto from_nvidia = kernel_resources::from_nvidia_registers(64, 8192, 256);
  EXPECT_EQ(from_nvidia.vgprs, 64u);
  EXPECT_EQ(from_nvidia.agprs, 0u);
  EXPECT_EQ(from_nvidia.lds_bytes, 8192u);
  EXPECT_EQ(from_trace.vgprs, from_nvidia.vgprs);
  EXPECT_EQ(from_trace.lds_bytes, from_nvidia.lds_bytes);
  const arch_model sm_90 = load_arch("sm_90");
  const occupancy_result a = compute_occupancy(sm_90, from_trace);
  const occupancy_result b = compute_occupancy(sm_90, from_nvidia);
  // 64 registers × 32 threads = 2048 per warp; 16384 per sub-partition / 2048 = 8 warps, × 4 = 32
  // warps per SM of 64.
  EXPECT_EQ(a.active_waves_per_simd, 32u);
  EXPECT_EQ(a.limiter, occupancy_limiter::registers);
  EXPECT_EQ(b.active_waves_per_simd, a.active_waves_per_simd);
  EXPECT_EQ(b.suggestions, a.suggestions);
}

} // namespace
} // namespace rpl::stages
