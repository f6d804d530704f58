#pragma once
/// Whether a candidate's output buffer matches the reference's: element by element, within the
/// argument's tolerance (|value - expected| <= abs + rel * |expected|). NaN matches only NaN and
/// an infinity only the same infinity; integer buffers without a tolerance compare exactly.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "messages/kernel_lane.hpp"

namespace rpl::workers::kernel_process {

bool within_tolerance(double value, double expected, const messages::value_tolerance& tolerance);

/// nullopt when every element matches; else the first wrong one and how many are wrong.
/// `bitwise`: every element must have the same bits (the tolerance is not read).
std::optional<messages::kernel_mismatch> compare_output(const messages::kernel_arg& arg,
                                                        std::span<const std::byte> value,
                                                        std::span<const std::byte> expected,
                                                        bool bitwise = false);

} // namespace rpl::workers::kernel_process
