#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/hardware/code_object_metadata.hpp"
#include "stages/hardware/launch_screen.hpp"

// NVIDIA's own calculator, header-only, where the CUDA toolkit is installed: the register rule is
// cross-checked against it (it answers 0 blocks per SM where the device refuses the launch).
#if __has_include("/usr/local/cuda/include/cuda_occupancy.h")
#include "/usr/local/cuda/include/cuda_occupancy.h"
#define RPL_HAVE_CUDA_OCCUPANCY 1
#endif

namespace rpl::stages {
namespace {

/// One launch and what the screen says of it: empty `refusal` = launchable; else a fragment the
/// reason must contain.
struct screen_case {
  const char* name;
  const char* target;
  launch_screen_input launch;
  const char* refusal;
};

launch_screen_input nvidia(std::uint64_t block,
                           std::uint32_t registers,
                           std::uint64_t static_bytes,
                           std::uint64_t dynamic_bytes) {
  launch_screen_input in;
  in.kernel = kernel_resources::from_nvidia_registers(registers, static_bytes, 0);
  in.block = {block, 1, 1};
  in.grid = {132, 1, 1};
  in.dynamic_shared_bytes = dynamic_bytes;
  return in;
}

launch_screen_input amd(std::uint64_t block,
                        std::uint32_t vgprs,
                        std::uint64_t static_lds,
                        std::uint64_t dynamic_lds,
                        std::uint32_t max_flat = 1024) {
  kernel_metadata k;
  k.vgpr_count = vgprs;
  k.sgpr_count = 32;
  k.group_segment_fixed_size = static_lds;
  k.wavefront_size = 64;
  launch_screen_input in;
  in.kernel = kernel_resources::from_code_object(k, 0);
  in.block = {block, 1, 1};
  in.grid = {110, 1, 1};
  in.dynamic_shared_bytes = dynamic_lds;
  in.max_flat_workgroup_size = max_flat;
  return in;
}

launch_screen_input
with_block(launch_screen_input in, std::uint64_t x, std::uint64_t y, std::uint64_t z) {
  in.block = {x, y, z};
  return in;
}

launch_screen_input
with_grid(launch_screen_input in, std::uint64_t x, std::uint64_t y, std::uint64_t z) {
  in.grid = {x, y, z};
  return in;
}

launch_screen_input without_opt_in(launch_screen_input in) {
  in.dynamic_shared_opt_in = false;
  return in;
}

// sm_90: 1024 threads per block; 65536 registers per block and SM, 4 sub-partitions of 16384,
// allocated per warp in units of 256; shared memory 48 KiB by default, 227 KiB (232448) opted in.
// gfx90a: 1024 work-items per workgroup; 64 KiB LDS; 512 VGPR+AGPR per lane, 4 SIMDs.
const std::vector<screen_case> cases{
    {"sm_90_fine", "sm_90", nvidia(256, 32, 4096, 0), ""},
    {"sm_90_1024_threads_64_registers_fit_exactly", "sm_90", nvidia(1024, 64, 0, 0), ""},
    {"sm_90_block_over_1024_threads", "sm_90", with_block(nvidia(1, 32, 0, 0), 1024, 2, 1),
     "a block of 1024x2x1 = 2048 threads > the 1024 threads a block may have on sm_90"},
    {"sm_90_block_z_over_64", "sm_90", with_block(nvidia(1, 32, 0, 0), 4, 4, 65),
     "block dimension z = 65 > the maximum 64"},
    {"sm_90_grid_y_over_65535", "sm_90", with_grid(nvidia(128, 32, 0, 0), 1, 65536, 1),
     "grid dimension y = 65536 > the maximum 65535"},
    // 72 registers: 2304 per warp; 32 warps need 73728.
    {"sm_90_1024_threads_72_registers", "sm_90", nvidia(1024, 72, 0, 0),
     "1024 threads x 72 registers: 32 warps x 2304 registers per warp (allocated in units of 256) "
     "= 73728 > the 65536 registers a block may use on sm_90"},
    {"sm_90_255_registers_256_threads_fit", "sm_90", nvidia(256, 255, 0, 0), ""},
    {"sm_90_255_registers_288_threads", "sm_90", nvidia(288, 255, 0, 0), "registers"},
    // 25 warps x 2560 = 64000 fit the block's 65536, but 7 warps land on one sub-partition.
    {"sm_90_sub_partition_refuses", "sm_90", nvidia(800, 80, 0, 0),
     "7 warps in one of 4 sub-partitions = 17920 > its 16384 registers"},
    {"sm_90_shared_at_the_opt_in_maximum", "sm_90", nvidia(256, 32, 0, 232448), ""},
    {"sm_90_shared_over_the_opt_in_maximum", "sm_90", nvidia(256, 32, 0, 233472),
     "shared memory of 233472 bytes per block (0 static + 233472 dynamic) > the 232448 a block "
     "may use on sm_90 (the opt-in maximum)"},
    {"sm_90_static_plus_dynamic_over_the_opt_in_maximum", "sm_90", nvidia(256, 32, 40960, 200000),
     "(40960 static + 200000 dynamic) > the 232448"},
    // Dynamic memory within 48 KiB is not opted in: static + dynamic must fit the default.
    {"sm_90_not_opted_in_over_48_kib", "sm_90", nvidia(256, 32, 32768, 32768),
     "> the 49152 a block may use on sm_90 (the default maximum"},
    {"sm_90_without_opt_in_over_48_kib", "sm_90", without_opt_in(nvidia(256, 32, 0, 65536)),
     "> the 49152"},
    {"gfx90a_fine", "gfx90a", amd(256, 64, 16384, 0), ""},
    {"gfx90a_workgroup_over_1024", "gfx90a", with_block(amd(1, 32, 0, 0), 512, 4, 1),
     "a workgroup of 512x4x1 = 2048 threads > the 1024 threads a workgroup may have on gfx90a"},
    {"gfx90a_over_launch_bounds", "gfx90a", amd(512, 32, 0, 0, 256),
     "a workgroup of 512 threads > the kernel's .max_flat_workgroup_size of 256"},
    {"gfx90a_workgroup_x_over_1024", "gfx90a", amd(2048, 32, 0, 0),
     "workgroup dimension x = 2048 > the maximum 1024 on gfx90a"},
    {"gfx90a_lds_over_64_kib", "gfx90a", amd(256, 32, 32768, 40000),
     "LDS of 72768 bytes per workgroup (32768 static + 40000 dynamic) > the 65536"},
    {"gfx90a_lds_at_64_kib", "gfx90a", amd(256, 32, 65536, 0), ""},
    // 1024 work-items = 16 waves, 4 per SIMD; 256 VGPRs allow only 2 waves per SIMD.
    {"gfx90a_vgprs_for_a_1024_workgroup", "gfx90a", amd(1024, 256, 0, 0),
     "static screen: a workgroup of 16 waves needs 4 waves per SIMD but 256 VGPRs allow only 2"},
    {"gfx90a_grid_work_items_over_32_bits", "gfx90a", with_grid(amd(256, 32, 0, 0), 16777216, 1, 1),
     "work-items > 4294967295"},
    {"gfx940_fine", "gfx940", amd(1024, 128, 65536, 0), ""},
};

class launch_screen_table : public ::testing::TestWithParam<screen_case> {};

TEST_P(launch_screen_table, refuses_what_the_device_would) {
  const screen_case& c = GetParam();
  const launch_screen_result r = screen_launch(load_arch(c.target), c.launch);
  if (std::string(c.refusal).empty()) {
    EXPECT_TRUE(r.launchable()) << r.refusal;
    EXPECT_GT(r.occupancy.occupancy, 0.0);
  } else {
    EXPECT_FALSE(r.launchable());
    EXPECT_EQ(r.refusal.rfind("static screen: ", 0), 0u) << r.refusal;
    EXPECT_NE(r.refusal.find(c.refusal), std::string::npos) << r.refusal;
    EXPECT_EQ(r.occupancy.occupancy, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(cases,
                         launch_screen_table,
                         ::testing::ValuesIn(cases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(stages_launch_screen, reports_the_theoretical_occupancy_of_a_launchable_launch) {
  // 256 threads x 32 registers, no shared memory: 8 blocks of 8 warps fill the SM's 64 warps.
  const auto r = screen_launch(load_arch("sm_90"), nvidia(256, 32, 0, 0));
  ASSERT_TRUE(r.launchable()) << r.refusal;
  EXPECT_EQ(r.occupancy.active_waves_per_cu, 64u);
  EXPECT_DOUBLE_EQ(r.occupancy.occupancy, 1.0);
}

#ifdef RPL_HAVE_CUDA_OCCUPANCY
/// Blocks per SM that cuda_occupancy.h allows for a block of `threads` at `registers`, no shared
/// memory: 0 is a launch the driver refuses for registers.
int cuda_blocks(const nvidia_limits& m, int threads, int registers) {
  cudaOccDeviceProp p;
  p.computeMajor = 9;
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
  a.numRegs = registers;
  a.numBlockBarriers = 1;
  cudaOccDeviceState state;
  cudaOccResult result;
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &p, &a, &state, threads, 0) !=
      CUDA_OCC_SUCCESS)
    return -1;
  return result.activeBlocksPerMultiprocessor;
}

TEST(stages_launch_screen, register_refusals_agree_with_cuda_occupancy_h) {
  const arch_model arch = load_arch("sm_90");
  int refused = 0;
  for (int threads = 32; threads <= 1024; threads += 32)
    for (int registers = 16; registers <= 255; registers += 1) {
      const auto r = screen_launch(arch, nvidia(static_cast<std::uint64_t>(threads),
                                                static_cast<std::uint32_t>(registers), 0, 0));
      const int blocks = cuda_blocks(*arch.nvidia, threads, registers);
      ASSERT_GE(blocks, 0);
      EXPECT_EQ(r.launchable(), blocks > 0)
          << threads << " threads x " << registers << " registers: " << r.refusal;
      refused += blocks == 0 ? 1 : 0;
    }
  EXPECT_GT(refused, 1000); // the sweep does reach the register limit often
}
#endif

} // namespace
} // namespace rpl::stages
