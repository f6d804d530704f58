#pragma once
/// What one kernel launch uses (registers, LDS or shared memory, block size), whichever source
/// described it, and the one rule that turns each source's register counts into a VGPR footprint.
///
/// The register rule, stated once:
/// - An AMDGPU code object's `.vgpr_count` is, on gfx90a and later (unified VGPR+AGPR file), the
///   total footprint alignTo(arch VGPRs, 4) + AGPRs, and `.agpr_count` is the AGPR part of it
///   (hipcc for gfx90a: 37 arch VGPRs + 40 AGPRs give .vgpr_count 80, .agpr_count 40).
///   from_code_object() therefore sets `vgprs_include_agprs`.
/// - rocpd's `arch_vgpr_count` holds the architectural VGPRs alone and `accum_vgpr_count` the
/// AGPRs,
///   as their names say; from_rocpd_symbol() passes them apart and the AGPRs come on top.
/// - NVIDIA has one register file: registers per thread go in `vgprs`, with no AGPRs. Our CUPTI
///   tracer stores them in rocpd's `arch_vgpr_count` (accum_vgpr_count 0), so from_rocpd_symbol()
///   and from_nvidia_registers() agree for an NVIDIA trace.
/// vgpr_footprint() applies the rule; for one kernel both AMD sources give the same footprint, and
/// so the same occupancy.

#include <cstdint>
#include <optional>

#include "stages/hardware/arch_model.hpp"

namespace rpl::stages {

struct kernel_metadata;
namespace rocpd {
struct kernel_symbol_row;
}

/// What one kernel launch uses. Build it with a factory below; the fields stay public for tests and
/// for "what if" searches that change one resource.
struct kernel_resources {
  std::uint32_t block_size = 256; ///< threads per workgroup/block
  /// AMD: arch VGPRs per lane, or the unified total when `vgprs_include_agprs`; NVIDIA: registers
  /// per thread.
  std::uint32_t vgprs = 0;
  std::uint32_t agprs = 0; ///< AMD: AGPRs per lane (rocpd accum_vgpr_count, .agpr_count)
  std::uint32_t sgprs = 0; ///< AMD: SGPRs per wave including VCC/FLAT_SCRATCH/XNACK (.sgpr_count)
  std::uint64_t lds_bytes =
      0; ///< AMD group segment; NVIDIA static + dynamic shared memory per block
  std::uint64_t scratch_bytes = 0; ///< per lane; does not limit occupancy in this model
  std::uint32_t wave_size = 0;     ///< 0 = the arch default (wave32 on RDNA)
  /// NVIDIA: the configured shared-memory carveout; default = the maximum.
  std::optional<std::uint64_t> shared_memory_carveout_bytes = std::nullopt;
  /// AMD unified file: `vgprs` is the total footprint (.vgpr_count), `agprs` is part of it.
  bool vgprs_include_agprs = false;

  /// From an AMDGPU code object's metadata note, launched with `block_size` threads: the unified
  /// .vgpr_count with the AGPRs inside it, static LDS, the code object's wave size.
  static kernel_resources from_code_object(const kernel_metadata& kernel, std::uint32_t block_size);

  /// From a rocpd kernel symbol, launched with `block_size` threads: arch VGPRs plus AGPRs on top.
  /// `dispatch_lds_bytes` is the dispatch's group segment, which includes dynamic LDS (shared
  /// memory) where the symbol's is only the static part: the larger of the two is used. The wave
  /// size is left to the architecture.
  static kernel_resources from_rocpd_symbol(const rocpd::kernel_symbol_row& symbol,
                                            std::uint32_t block_size,
                                            std::int64_t dispatch_lds_bytes);

  /// From NVIDIA's registers per thread and shared memory per block (static + dynamic), as
  /// cudaFuncAttributes, nvcc --resource-usage and CUPTI report them.
  static kernel_resources from_nvidia_registers(std::uint32_t registers_per_thread,
                                                std::uint64_t shared_memory_bytes,
                                                std::uint32_t block_size);
};

/// A wave's VGPR footprint per lane under the rule above: on a unified file the AGPRs follow the
/// arch VGPRs aligned to accum_offset's granule (or are already inside a code object's total);
/// elsewhere the larger of the two (LLVM getTotalNumVGPRs).
std::uint64_t vgpr_footprint(const amd_limits& limits, const kernel_resources& kernel);

} // namespace rpl::stages
