#pragma once
/// The red zones of a replay placed by the allocation walk (rpl-replay-cuda, where the driver will
/// not reserve the captured addresses): each region cuMemAlloc'd again, in the program's order,
/// until the allocator returns its address. The bytes around a region are then the allocator's,
/// unless the replay owns them: the slack it asked past a region's end (walk_request), an
/// allocation the walk made on its way and kept because it lies next to a region (a filler), or
/// one it claimed after the last region. Those owned bytes within reach of a region, outside every
/// region, are its red zones (red_zones.hpp fills and checks them).

#include <cstdint>
#include <vector>

#include "stages/capture/capture_manifest.hpp"
#include "stages/capture/va_ranges.hpp"

namespace rpl::stages::capture {

/// How far from a region the walk's red zones reach, before and after it (as the kernel lane's).
inline constexpr std::uint64_t walk_zone_reach = 4096;

/// What the walk asks cuMemAlloc for a region of `size` bytes, so that the allocator consumes what
/// it consumed for the program (every later address stays the program's) while the bytes asked
/// past the region become the region's own allocation. Measured on CUDA 13.0 (H200, driver 580):
/// up to 1 MiB, allocations are carved in 512-byte steps (4000 bytes take 4096): the request is
/// rounded up to 512; above 1 MiB they take whole 2 MiB pages: up to 4 KiB more, within the same
/// 64 KiB.
std::uint64_t walk_request(std::uint64_t size);

/// True when `a` comes within `reach` bytes of a region's start or end (or overlaps one).
bool within_reach(const va_range& a,
                  const std::vector<memory_region>& regions,
                  std::uint64_t reach = walk_zone_reach);

/// The red zones: within `reach` bytes before and after each region, the bytes of `owned` (the
/// replay's allocations, a region's own included) that no region covers, in address order; a
/// zone never spans two allocations (a device copy may not).
std::vector<va_range> walk_red_zones(const std::vector<memory_region>& regions,
                                     const std::vector<va_range>& owned,
                                     std::uint64_t reach = walk_zone_reach);

} // namespace rpl::stages::capture
