#include "stages/capture/red_zones.hpp"

#include <algorithm>
#include <array>

namespace rpl::stages::capture {

std::uint8_t red_zone_byte(std::uint64_t address) {
  // The kernel lane's pattern (workers/lanes/kernel/process/device_buffers.cpp).
  static constexpr std::array<std::uint8_t, 8> pattern{0xa5, 0x5a, 0xc3, 0x3c,
                                                       0x96, 0x69, 0xf0, 0x0f};
  return pattern[address % pattern.size()];
}

std::vector<va_range> red_zones(const std::vector<va_range>& ranges,
                                const std::vector<memory_region>& regions) {
  std::vector<va_range> covered;
  for (const auto& r : regions)
    if (r.size > 0)
      covered.push_back({r.base, r.size});
  std::sort(covered.begin(), covered.end(),
            [](const va_range& a, const va_range& b) { return a.base < b.base; });
  std::vector<va_range> zones;
  for (const auto& range : ranges) {
    std::uint64_t at = range.base;
    const std::uint64_t end = range.base + range.size;
    for (const auto& c : covered) {
      if (c.base + c.size <= at || c.base >= end)
        continue;
      if (c.base > at)
        zones.push_back({at, c.base - at});
      at = std::max(at, c.base + c.size);
    }
    if (at < end)
      zones.push_back({at, end - at});
  }
  return zones;
}

namespace {

/// The region `address` is nearest to, and on which side of it.
red_zone_violation nearest(std::uint64_t address, const std::vector<memory_region>& regions) {
  red_zone_violation v;
  std::uint64_t best = UINT64_MAX;
  for (const auto& r : regions) {
    const std::uint64_t end = r.base + r.size;
    const bool after = address >= end;
    const std::uint64_t distance = after ? address - end : r.base - address;
    if (distance < best) {
      best = distance;
      v.region = r.base;
      v.side = after ? "after" : "before";
      v.offset = static_cast<std::int64_t>(address) - static_cast<std::int64_t>(r.base);
    }
  }
  return v;
}

} // namespace

void check_red_zone(const va_range& zone,
                    std::span<const std::uint8_t> now,
                    const std::vector<memory_region>& regions,
                    std::optional<red_zone_violation>& found) {
  std::uint64_t changed = 0;
  std::optional<std::uint64_t> first;
  const std::size_t n = std::min<std::size_t>(now.size(), zone.size);
  for (std::size_t i = 0; i < n; ++i) {
    if (now[i] != red_zone_byte(zone.base + i)) {
      ++changed;
      if (!first)
        first = zone.base + i;
    }
  }
  if (changed == 0)
    return;
  if (!found) {
    found = nearest(*first, regions);
    found->changed = 0;
  }
  found->changed += changed;
}

std::string describe(const red_zone_violation& v) {
  const std::string where =
      v.side == "before"
          ? std::to_string(-v.offset) + " bytes before the start of region " + hex_address(v.region)
          : "byte " + std::to_string(v.offset) + " of region " + hex_address(v.region) +
                ", past its end";
  return "wrote " + where + " (" + std::to_string(v.changed) + " bytes of the red zones changed)";
}

} // namespace rpl::stages::capture
