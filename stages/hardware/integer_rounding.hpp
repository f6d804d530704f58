#pragma once
/// Rounding in whole units, as allocation granules and launch shapes need it.

#include <cstdint>

namespace rpl::stages {

/// `x` rounded up to a multiple of `granule` (`x` itself when `granule` is 0).
constexpr std::uint64_t align_up(std::uint64_t x, std::uint64_t granule) {
  return granule == 0 ? x : (x + granule - 1) / granule * granule;
}

/// `x / y` rounded up; `y` is not 0.
constexpr std::uint64_t div_up(std::uint64_t x, std::uint64_t y) {
  return (x + y - 1) / y;
}

} // namespace rpl::stages
