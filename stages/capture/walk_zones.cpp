#include "stages/capture/walk_zones.hpp"

#include <algorithm>

#include "stages/capture/red_zones.hpp"

namespace rpl::stages::capture {

std::uint64_t walk_request(std::uint64_t size) {
  constexpr std::uint64_t small_step = 512, small_limit = 1 << 20;
  constexpr std::uint64_t zone = 4096, granule = 64 * 1024;
  if (size == 0)
    return 0;
  if (size <= small_limit)
    return (size + small_step - 1) / small_step * small_step;
  const std::uint64_t granule_end = (size + granule - 1) / granule * granule;
  return std::min(size + zone, granule_end);
}

namespace {

/// The window of `reach` bytes before a region's start, and the one after its end.
std::vector<va_range> windows(const std::vector<memory_region>& regions, std::uint64_t reach) {
  std::vector<va_range> out;
  for (const auto& r : regions) {
    if (r.size == 0)
      continue;
    const std::uint64_t from = r.base > reach ? r.base - reach : 0;
    out.push_back({from, r.base - from});
    out.push_back({r.base + r.size, reach});
  }
  return out;
}

bool overlap(const va_range& a, const va_range& b) {
  return a.base < b.base + b.size && b.base < a.base + a.size;
}

} // namespace

bool within_reach(const va_range& a,
                  const std::vector<memory_region>& regions,
                  std::uint64_t reach) {
  for (const auto& w : windows(regions, reach))
    if (overlap(a, w))
      return true;
  for (const auto& r : regions)
    if (r.size > 0 && overlap(a, {r.base, r.size}))
      return true;
  return false;
}

std::vector<va_range> walk_red_zones(const std::vector<memory_region>& regions,
                                     const std::vector<va_range>& owned,
                                     std::uint64_t reach) {
  const auto near = windows(regions, reach);
  std::vector<va_range> zones;
  for (const auto& o : owned) {
    // Merged within each allocation, never across two (a copy may not span allocations).
    std::vector<va_range> pieces;
    for (const auto& w : near)
      if (o.size > 0 && overlap(w, o)) {
        const std::uint64_t from = std::max(w.base, o.base);
        const std::uint64_t to = std::min(w.base + w.size, o.base + o.size);
        pieces.push_back({from, to - from});
      }
    std::sort(pieces.begin(), pieces.end(),
              [](const va_range& a, const va_range& b) { return a.base < b.base; });
    std::vector<va_range> merged;
    for (const auto& p : pieces) {
      if (!merged.empty() && p.base <= merged.back().base + merged.back().size) {
        auto& m = merged.back();
        m.size = std::max(m.base + m.size, p.base + p.size) - m.base;
      } else {
        merged.push_back(p);
      }
    }
    for (const auto& z : red_zones(merged, regions))
      zones.push_back(z);
  }
  std::sort(zones.begin(), zones.end(),
            [](const va_range& a, const va_range& b) { return a.base < b.base; });
  return zones;
}

} // namespace rpl::stages::capture
