#pragma once
/// A replay's red zones: the bytes of the reserved ranges (va_ranges.hpp) that no captured region
/// covers. In the application they were no allocation of the kernel's; a replay fills them with a
/// pattern (anchored at the absolute address) before the launch and reads them back after it, so
/// that a kernel writing past the end (or before the start) of a region, while every region
/// still matches its captured after-state, is found: the first changed byte, named by the region
/// it is nearest to. Regions that abut leave no zone between them; a write from one into the
/// other changes the other's contents, which the after-state comparison sees.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stages/capture/capture_manifest.hpp"
#include "stages/capture/va_ranges.hpp"

namespace rpl::stages::capture {

/// The pattern byte at `address` (neither zeros, ones, a small integer nor a common float).
std::uint8_t red_zone_byte(std::uint64_t address);

/// The parts of `ranges` that no region covers, in address order.
std::vector<va_range> red_zones(const std::vector<va_range>& ranges,
                                const std::vector<memory_region>& regions);

struct red_zone_violation {
  std::uint64_t region = 0;  ///< the base of the region the first changed byte is nearest to
  std::string side;          ///< "after" its end or "before" its start
  std::int64_t offset = 0;   ///< from the region's first byte (past the end: >= its size)
  std::uint64_t changed = 0; ///< changed bytes in every zone checked
};

/// Adds the changed bytes of `zone` (its contents read back in `now`) to `found`, naming the
/// first one, by the region it is nearest to, when `found` holds none yet.
void check_red_zone(const va_range& zone,
                    std::span<const std::uint8_t> now,
                    const std::vector<memory_region>& regions,
                    std::optional<red_zone_violation>& found);

/// "wrote byte 4100 of region 0x7f0000200000, past its end (4 bytes of the red zones changed)".
std::string describe(const red_zone_violation& v);

} // namespace rpl::stages::capture
