#pragma once
/// Where a replay must reserve virtual addresses: the captured regions widened to the device's
/// mapping granularity (CUDA: cuMemGetAllocationGranularity, 2 MiB on H100/H200;
/// ../shared/reference/hardware-models.md §5.3) and merged where they touch, since small
/// allocations share granules.

#include <cstdint>
#include <vector>

#include "stages/capture/capture_manifest.hpp"

namespace rpl::stages::capture {

struct va_range {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  bool operator==(const va_range&) const = default;
};

/// The sorted, disjoint, granularity-aligned ranges that cover every region. Throws capture_error
/// for a granularity that is zero or not a power of two, or a region that wraps the address space.
std::vector<va_range> reservation_ranges(const std::vector<memory_region>& regions,
                                         std::uint64_t granularity);

/// Every region moved by `shift` bytes (a multiple of the granularity): for the check that a
/// replay at other addresses fails verification.
std::vector<memory_region> shifted(std::vector<memory_region> regions, std::uint64_t shift);

} // namespace rpl::stages::capture
