#include "stages/capture/va_ranges.hpp"

#include <algorithm>

namespace rpl::stages::capture {

std::vector<va_range> reservation_ranges(const std::vector<memory_region>& regions,
                                         std::uint64_t granularity) {
  if (granularity == 0 || (granularity & (granularity - 1)) != 0) {
    throw capture_error("VA granularity " + std::to_string(granularity) +
                        " is not a power of two; fix: a capture's granularity comes from the "
                        "device (cuMemGetAllocationGranularity): capture again");
  }
  std::vector<va_range> ranges;
  for (const auto& r : regions) {
    const std::uint64_t end = r.base + r.size;
    if (r.size == 0 || end < r.base || end + granularity - 1 < end) {
      throw capture_error("region " + hex_address(r.base) + " of " + std::to_string(r.size) +
                          " bytes does not fit the address space; fix: capture again");
    }
    const std::uint64_t low = r.base & ~(granularity - 1);
    const std::uint64_t high = (end + granularity - 1) & ~(granularity - 1);
    ranges.push_back({low, high - low});
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const va_range& a, const va_range& b) { return a.base < b.base; });
  std::vector<va_range> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.base <= merged.back().base + merged.back().size) {
      const auto end = std::max(merged.back().base + merged.back().size, r.base + r.size);
      merged.back().size = end - merged.back().base;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<memory_region> shifted(std::vector<memory_region> regions, std::uint64_t shift) {
  for (auto& r : regions) {
    r.base += shift;
  }
  return regions;
}

} // namespace rpl::stages::capture
