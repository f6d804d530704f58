#pragma once
/// Verification of a replayed dispatch: the memory it left against the captured after-state.
/// Bit-exact by default; with a tolerance (kernels whose atomics reorder float sums), the bytes
/// are read as float32 and each may differ by abs + rel * |expected|.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace rpl::stages::capture {

struct float_tolerance {
  double abs = 0;
  double rel = 0;
};

struct compare_result {
  std::uint64_t compared_bytes = 0;
  std::uint64_t mismatched = 0; ///< bytes (bit-exact) or float32 elements (tolerance)
  std::uint64_t first_mismatch_offset = 0;
  bool equal() const { return mismatched == 0; }
};

/// Compares `actual` with `expected` (the same size, else every byte of the difference counts).
compare_result compare_output(std::span<const std::uint8_t> expected,
                              std::span<const std::uint8_t> actual,
                              const std::optional<float_tolerance>& tolerance);

/// "bit-exact" or "float32 within abs 1e-06 + rel 1e-05".
std::string describe(const std::optional<float_tolerance>& tolerance);

} // namespace rpl::stages::capture
