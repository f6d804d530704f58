#include "stages/hardware/kernel_resources.hpp"

#include <algorithm>

#include "stages/hardware/code_object_metadata.hpp"
// Only the row type: hardware reads nothing from a trace, it is told what a symbol says.
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages {

kernel_resources kernel_resources::from_code_object(const kernel_metadata& kernel,
                                                    std::uint32_t block_size) {
  kernel_resources r;
  r.block_size = block_size;
  r.vgprs = kernel.vgpr_count;
  r.agprs = kernel.agpr_count;
  r.vgprs_include_agprs = true;
  r.sgprs = kernel.sgpr_count;
  r.lds_bytes = kernel.group_segment_fixed_size;
  r.scratch_bytes = kernel.private_segment_fixed_size;
  r.wave_size = kernel.wavefront_size;
  return r;
}

kernel_resources kernel_resources::from_rocpd_symbol(const rocpd::kernel_symbol_row& symbol,
                                                     std::uint32_t block_size,
                                                     std::int64_t dispatch_lds_bytes) {
  kernel_resources r;
  r.block_size = block_size;
  r.vgprs = static_cast<std::uint32_t>(symbol.arch_vgpr_count);
  r.agprs = static_cast<std::uint32_t>(symbol.accum_vgpr_count);
  r.sgprs = static_cast<std::uint32_t>(symbol.sgpr_count);
  r.lds_bytes = static_cast<std::uint64_t>(
      std::max<std::int64_t>(dispatch_lds_bytes, symbol.group_segment_size));
  r.scratch_bytes = static_cast<std::uint64_t>(symbol.private_segment_size);
  return r;
}

kernel_resources kernel_resources::from_nvidia_registers(std::uint32_t registers_per_thread,
                                                         std::uint64_t shared_memory_bytes,
                                                         std::uint32_t block_size) {
  kernel_resources r;
  r.block_size = block_size;
  r.vgprs = registers_per_thread;
  r.lds_bytes = shared_memory_bytes;
  return r;
}

std::uint64_t vgpr_footprint(const amd_limits& limits, const kernel_resources& kernel) {
  if (limits.unified_vgpr_agpr && kernel.vgprs_include_agprs)
    return std::max(kernel.vgprs, kernel.agprs);
  if (limits.unified_vgpr_agpr && kernel.agprs > 0) {
    const std::uint64_t granule = limits.agpr_offset_alignment;
    return (kernel.vgprs + granule - 1) / granule * granule + kernel.agprs;
  }
  return std::max(kernel.vgprs, kernel.agprs);
}

} // namespace rpl::stages
