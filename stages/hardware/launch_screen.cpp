#include "stages/hardware/launch_screen.hpp"

#include <algorithm>

#include "stages/hardware/integer_rounding.hpp"

namespace rpl::stages {
namespace {

// Per-dimension limits that are not in the architecture models: CUDA C++ Programming Guide,
// "Features and Technical Specifications" (every compute capability since 3.0); HIP's
// hipDeviceProp_t maxThreadsDim / maxGridSize on CDNA and RDNA, and the AQL dispatch packet's
// 32-bit grid_size_{x,y,z} (work-items).
constexpr std::array<std::uint64_t, 3> nvidia_max_block_dims{1024, 1024, 64};
constexpr std::array<std::uint64_t, 3> nvidia_max_grid_dims{2147483647, 65535, 65535};
constexpr std::array<std::uint64_t, 3> amd_max_block_dims{1024, 1024, 1024};
constexpr std::uint64_t amd_max_grid_work_items = 4294967295;
constexpr const char* axis_names[3] = {"x", "y", "z"};

std::string dims(const std::array<std::uint64_t, 3>& d) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

std::string refuse(const std::string& why) {
  return "static screen: " + why;
}

/// Block and grid dimensions; the block's thread count against the architecture and the kernel.
std::string
check_geometry(const arch_model& arch, const launch_screen_input& in, std::uint64_t threads) {
  const bool amd = arch.amd.has_value();
  const char* block_noun = amd ? "workgroup" : "block";
  const auto& max_block = amd ? amd_max_block_dims : nvidia_max_block_dims;
  for (std::size_t i = 0; i < 3; ++i) {
    if (in.block[i] == 0 || in.grid[i] == 0)
      return refuse(std::string("an empty ") + (in.block[i] == 0 ? block_noun : "grid") + " (" +
                    axis_names[i] + " = 0) cannot launch");
    if (in.block[i] > max_block[i])
      return refuse(std::string(block_noun) + " dimension " + axis_names[i] + " = " +
                    std::to_string(in.block[i]) + " > the maximum " + std::to_string(max_block[i]) +
                    " on " + arch.target);
  }
  const std::uint64_t max_threads =
      amd ? arch.amd->max_workgroup_size : arch.nvidia->max_threads_per_block;
  if (threads > max_threads)
    return refuse(std::string("a ") + block_noun + " of " + dims(in.block) + " = " +
                  std::to_string(threads) + " threads > the " + std::to_string(max_threads) +
                  " threads a " + block_noun + " may have on " + arch.target);
  if (amd && in.max_flat_workgroup_size != 0 && threads > in.max_flat_workgroup_size)
    return refuse("a workgroup of " + std::to_string(threads) +
                  " threads > the kernel's .max_flat_workgroup_size of " +
                  std::to_string(in.max_flat_workgroup_size) +
                  " (its __launch_bounds__, 1024 by default) on " + arch.target);
  for (std::size_t i = 0; i < 3; ++i) {
    if (amd && in.grid[i] * in.block[i] > amd_max_grid_work_items)
      return refuse("grid dimension " + std::string(axis_names[i]) + ": " +
                    std::to_string(in.grid[i]) + " workgroups x " + std::to_string(in.block[i]) +
                    " = " + std::to_string(in.grid[i] * in.block[i]) + " work-items > " +
                    std::to_string(amd_max_grid_work_items) + " on " + arch.target);
    if (!amd && in.grid[i] > nvidia_max_grid_dims[i])
      return refuse("grid dimension " + std::string(axis_names[i]) + " = " +
                    std::to_string(in.grid[i]) + " > the maximum " +
                    std::to_string(nvidia_max_grid_dims[i]) + " on " + arch.target);
  }
  return {};
}

/// NVIDIA registers, as cudaOccMaxBlocksPerSMRegsLimit allocates them: per warp, rounded up to
/// the allocation unit; a block's warps are spread over the sub-partitions, each with its share of
/// the register file.
std::string check_nvidia_registers(const arch_model& arch,
                                   const nvidia_limits& m,
                                   std::uint64_t threads,
                                   std::uint32_t registers,
                                   std::uint32_t warp_size) {
  if (registers > m.max_registers_per_thread)
    return refuse(std::to_string(registers) + " registers per thread > the maximum of " +
                  std::to_string(m.max_registers_per_thread) + " on " + arch.target);
  const std::uint64_t warps = div_up(threads, warp_size);
  const std::uint64_t per_warp =
      align_up(std::uint64_t{registers} * warp_size, m.register_allocation_unit_size);
  const std::string head = std::to_string(threads) + " threads x " + std::to_string(registers) +
                           " registers: " + std::to_string(warps) + " warps x " +
                           std::to_string(per_warp) +
                           " registers per warp (allocated in units of " +
                           std::to_string(m.register_allocation_unit_size) + ")";
  if (per_warp * warps > m.registers_per_block)
    return refuse(head + " = " + std::to_string(per_warp * warps) + " > the " +
                  std::to_string(m.registers_per_block) + " registers a block may use on " +
                  arch.target);
  const std::uint64_t parts = std::max<std::uint32_t>(m.sub_partitions_per_sm, 1);
  const std::uint64_t per_part = m.registers_per_sm / parts;
  if (per_warp * div_up(warps, parts) > per_part)
    return refuse(head + ", " + std::to_string(div_up(warps, parts)) + " warps in one of " +
                  std::to_string(parts) +
                  " sub-partitions = " + std::to_string(per_warp * div_up(warps, parts)) +
                  " > its " + std::to_string(per_part) + " registers on " + arch.target);
  return {};
}

std::string check_nvidia_shared_memory(const arch_model& arch,
                                       const nvidia_limits& m,
                                       const launch_screen_input& in) {
  const std::uint64_t static_bytes = in.kernel.lds_bytes;
  const std::uint64_t total = static_bytes + in.dynamic_shared_bytes;
  const bool opted_in = in.dynamic_shared_opt_in &&
                        in.dynamic_shared_bytes > m.default_max_shared_memory_per_block_bytes;
  const std::uint64_t limit =
      opted_in ? m.max_shared_memory_per_block_bytes : m.default_max_shared_memory_per_block_bytes;
  if (total <= limit)
    return {};
  return refuse("shared memory of " + std::to_string(total) + " bytes per block (" +
                std::to_string(static_bytes) + " static + " +
                std::to_string(in.dynamic_shared_bytes) + " dynamic) > the " +
                std::to_string(limit) + " a block may use on " + arch.target +
                (opted_in ? " (the opt-in maximum)"
                          : " (the default maximum: dynamic memory up to " +
                                std::to_string(m.default_max_shared_memory_per_block_bytes) +
                                " bytes is not opted in)"));
}

std::string
check_amd_lds(const arch_model& arch, const amd_limits& m, const launch_screen_input& in) {
  const std::uint64_t total = in.kernel.lds_bytes + in.dynamic_shared_bytes;
  if (total <= m.max_lds_per_workgroup_bytes)
    return {};
  return refuse("LDS of " + std::to_string(total) + " bytes per workgroup (" +
                std::to_string(in.kernel.lds_bytes) + " static + " +
                std::to_string(in.dynamic_shared_bytes) + " dynamic) > the " +
                std::to_string(m.max_lds_per_workgroup_bytes) + " a workgroup may allocate on " +
                arch.target);
}

} // namespace

launch_screen_result screen_launch(const arch_model& arch, const launch_screen_input& in) {
  launch_screen_result out;
  const std::uint64_t threads = in.block[0] * in.block[1] * in.block[2];
  kernel_resources k = in.kernel;
  k.block_size = static_cast<std::uint32_t>(std::min<std::uint64_t>(threads, UINT32_MAX));
  k.lds_bytes = in.kernel.lds_bytes + in.dynamic_shared_bytes;
  out.occupancy = compute_occupancy(arch, k);

  out.refusal = check_geometry(arch, in, threads);
  if (out.refusal.empty() && arch.nvidia)
    out.refusal = check_nvidia_registers(arch, *arch.nvidia, threads, in.kernel.vgprs,
                                         out.occupancy.wave_size);
  if (out.refusal.empty() && arch.nvidia)
    out.refusal = check_nvidia_shared_memory(arch, *arch.nvidia, in);
  if (out.refusal.empty() && arch.amd)
    out.refusal = check_amd_lds(arch, *arch.amd, in);
  // What the occupancy model alone sees (AMD VGPRs or SGPRs for the workgroup's waves): its first
  // suggestion says why not one workgroup fits.
  if (out.refusal.empty() && out.occupancy.active_waves_per_cu == 0)
    out.refusal = refuse(out.occupancy.suggestions.empty()
                             ? std::string("not one ") + (arch.amd ? "workgroup" : "block") +
                                   " fits (limited by " + to_string(out.occupancy.limiter) +
                                   ") on " + arch.target
                             : out.occupancy.suggestions.front());
  if (!out.refusal.empty()) {
    out.occupancy.occupancy = 0;
    out.occupancy.active_waves_per_simd = 0;
    out.occupancy.active_waves_per_cu = 0;
    out.occupancy.active_workgroups_per_cu = 0;
  }
  return out;
}

} // namespace rpl::stages
