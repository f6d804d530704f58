#pragma once
/// Theoretical occupancy of a kernel on one architecture: how many waves (warps) its registers,
/// LDS (shared memory), block size and the hardware slots let stay resident, which resource
/// limits it, and what change would raise it. Rules: shared/reference/hardware-models.md §2.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stages/hardware/arch_model.hpp"
#include "stages/hardware/kernel_resources.hpp"

namespace rpl::stages {

/// The resource that bounds occupancy.
enum class occupancy_limiter : std::uint8_t {
  waves = 0,         ///< hardware wave/warp slots
  vgprs = 1,         ///< AMD VGPRs (AGPRs included: they share the file on CDNA2+)
  sgprs = 2,         ///< AMD SGPRs (GFX9 only)
  lds = 3,           ///< AMD LDS per CU/WGP, or per workgroup
  workgroups = 4,    ///< max workgroups/blocks per CU/SM
  barriers = 5,      ///< AMD hardware barriers per CU/WGP
  registers = 6,     ///< NVIDIA registers
  shared_memory = 7, ///< NVIDIA shared memory
  block_size = 8,    ///< block larger than allowed (or empty) → 0
};

/// "waves", "vgprs", "sgprs", "lds", "workgroups", "barriers", "registers", "shared_memory",
/// "block_size".
const char* to_string(occupancy_limiter value);

struct occupancy_result {
  /// AMD: resident waves on the busiest SIMD (LLVM's "waves per EU"); NVIDIA: active warps per SM.
  std::uint32_t active_waves_per_simd = 0;
  std::uint32_t max_waves_per_simd = 0;       ///< AMD: wave slots per SIMD; NVIDIA: warps per SM
  std::uint32_t active_workgroups_per_cu = 0; ///< per CU (CDNA), WGP (RDNA) or SM (NVIDIA)
  std::uint32_t active_waves_per_cu = 0;      ///< resident waves (warps) per CU/WGP/SM
  std::uint32_t max_waves_per_cu = 0;         ///< wave (warp) slots per CU/WGP/SM
  /// active_waves_per_cu / max_waves_per_cu. Equals active_waves_per_simd / max_waves_per_simd
  /// unless a workgroup's waves spread unevenly over the SIMDs.
  double occupancy = 0;
  occupancy_limiter limiter = occupancy_limiter::waves;
  /// Waves per SIMD (warps per SM) each resource alone would allow, keyed by to_string(limiter).
  std::map<std::string, std::uint32_t> limit_by_resource;
  /// What would raise occupancy, found by searching the resource's allocation steps, e.g.
  /// "with at most 96 VGPRs: 5 waves per SIMD (62.5%)".
  std::vector<std::string> suggestions;
  std::string unit;            ///< "waves per SIMD" or "warps per SM"
  std::uint32_t wave_size = 0; ///< the wave size used
};

/// Theoretical occupancy of `kernel` on `arch`. A launch that cannot run (too many threads,
/// registers or LDS) gives occupancy 0 with the limiter that refuses it and a suggestion.
/// Throws arch_error only for a wave size the architecture does not have.
occupancy_result compute_occupancy(const arch_model& arch, const kernel_resources& kernel);

} // namespace rpl::stages
