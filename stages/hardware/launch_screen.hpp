#pragma once
/// The static screen: would the device refuse this launch? Decided from the kernel's resources
/// (compiler report or code-object metadata), the launch geometry and the architecture model, with
/// no GPU. A refused launch costs no GPU time: autotune marks it invalid with the reason. Pure; the
/// engine gathers the inputs (engine/autotune/candidate_screen.hpp).
///
/// What the device refuses (checked in this order, the first refusal is the reason):
/// - block (workgroup) dimensions over their limits (NVIDIA x, y ≤ 1024, z ≤ 64; AMD each ≤ 1024),
///   their product over the architecture's threads per block, or (AMD) over the kernel's own
///   `.max_flat_workgroup_size` (`__launch_bounds__`, default 1024);
/// - grid dimensions over their limits (NVIDIA x ≤ 2³¹−1, y, z ≤ 65535; AMD grid × workgroup
///   per dimension ≤ 2³²−1 work-items, the dispatch packet's field);
/// - NVIDIA registers: per thread over the maximum, or the block's warps at the per-warp
///   allocation (registers × 32 rounded up to the allocation unit) over the registers a block may
///   use, its warps spread over the SM's sub-partitions as the hardware places them;
/// - NVIDIA shared memory: static + dynamic over what the block is allowed. Dynamic memory above
///   the default per-block maximum (48 KiB) is allowed only when the launcher opts the kernel in
///   (the kernel lane does: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), and then the opt-in
///   maximum bounds static + dynamic; without the opt-in, static + dynamic ≤ the default;
/// - AMD LDS: static + dynamic over the workgroup maximum;
/// - anything else the occupancy model says cannot fit one block (AMD VGPRs or SGPRs for the
///   workgroup's waves): occupancy 0.

#include <array>
#include <cstdint>
#include <string>

#include "stages/hardware/arch_model.hpp"
#include "stages/hardware/kernel_resources.hpp"
#include "stages/hardware/occupancy_model.hpp"

namespace rpl::stages {

/// One launch of one kernel, as the screen needs it.
struct launch_screen_input {
  /// The kernel's registers (NVIDIA: per thread; AMD: VGPRs/AGPRs/SGPRs as from_code_object sets
  /// them) and its *static* shared memory (LDS) in `lds_bytes`; `block_size` is ignored (the
  /// product of `block` is used).
  kernel_resources kernel;
  std::array<std::uint64_t, 3> block{1, 1, 1};
  std::array<std::uint64_t, 3> grid{1, 1, 1};
  std::uint64_t dynamic_shared_bytes = 0;
  /// AMD: the code object's `.max_flat_workgroup_size`; 0 when unknown.
  std::uint32_t max_flat_workgroup_size = 0;
  /// NVIDIA: the launcher raises the kernel's dynamic shared memory limit when it needs more than
  /// the default (the kernel lane does).
  bool dynamic_shared_opt_in = true;
};

struct launch_screen_result {
  /// Empty when the device would accept the launch; else "static screen: ..." naming the limit,
  /// the values and the architecture.
  std::string refusal;
  /// The launch's theoretical occupancy (shared memory: static + dynamic); 0 when refused.
  occupancy_result occupancy;
  bool launchable() const { return refusal.empty(); }
};

/// Screens one launch. Throws arch_error only for a wave size the architecture lacks.
launch_screen_result screen_launch(const arch_model& arch, const launch_screen_input& launch);

} // namespace rpl::stages
