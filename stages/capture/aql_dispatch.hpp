#pragma once
/// The HSA (AMD) side of a capture, as values: an AQL kernel dispatch packet (the 64 bytes a queue
/// holds, HSA Platform System Architecture Specification 1.2, §2.9.6 "Kernel dispatch packet") and
/// the dispatch manifest it makes with the kernel's code-object metadata (stages/hardware): grid in
/// workgroups, workgroup size, dynamic LDS (the packet's group segment less the kernel's static
/// LDS), and the kernarg layout from the metadata's arguments, hidden ones included, so kernarg.bin
/// holds the whole segment. The HSA capture library (workers/capture/hsa/) decodes intercepted
/// packets with it; tested on recorded packets and real hipcc code objects.

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "stages/capture/capture_manifest.hpp"
#include "stages/hardware/code_object_metadata.hpp"

namespace rpl::stages::capture {

/// HSA_PACKET_TYPE_KERNEL_DISPATCH in the header's type field (bits 0-7).
inline constexpr std::uint16_t aql_kernel_dispatch_type = 2;

struct aql_dispatch {
  std::uint16_t header = 0;
  std::uint16_t setup = 0; ///< bits 0-1: dimensions (1, 2 or 3)
  std::array<std::uint16_t, 3> workgroup{1, 1, 1};
  std::array<std::uint32_t, 3> grid{1, 1, 1}; ///< in work-items, as HSA counts
  std::uint32_t private_segment_size = 0;
  std::uint32_t group_segment_size = 0; ///< static + dynamic LDS bytes per workgroup
  std::uint64_t kernel_object = 0;
  std::uint64_t kernarg_address = 0;
  std::uint64_t completion_signal = 0;

  int dimensions() const { return setup & 0x3; }
  /// Workgroups per dimension: the grid rounded up (HSA allows a partial last workgroup).
  std::array<std::uint32_t, 3> workgroups() const;
};

/// Whether the 64 bytes are a kernel dispatch packet (by the header's type).
bool is_kernel_dispatch(std::span<const std::uint8_t> packet);

/// Decodes a kernel dispatch packet; throws capture_error for another packet type, a size other
/// than 64 bytes, zero sizes or dimensions outside 1..3.
aql_dispatch decode_aql_dispatch(std::span<const std::uint8_t> packet);

/// The packet's 64 bytes (what a replay writes into its queue), the inverse of decode.
std::array<std::uint8_t, 64> encode_aql_dispatch(const aql_dispatch& packet);

/// The manifest of `packet` launching `kernel` on `arch` (e.g. "gfx942"): backend "hsa", geometry
/// in workgroups, dynamic LDS, every argument's offset and size. Throws capture_error when the
/// packet's group segment is smaller than the kernel's static LDS or the metadata has no kernarg
/// layout.
dispatch_manifest hsa_manifest(const aql_dispatch& packet,
                               const stages::kernel_metadata& kernel,
                               const std::string& arch);

} // namespace rpl::stages::capture
