#pragma once
/// Element values in host memory: reading any element type as a double (for comparisons and
/// messages), writing one from a double or an integer (for initial contents), IEEE half
/// conversion for f16 (the lane never needs a compiler's half type), and scalar arguments laid
/// out as the kernel expects them.

#include <array>
#include <cstddef>
#include <cstdint>

#include "messages/kernel_lane.hpp"

namespace rpl::workers::kernel_process {

/// Round to nearest even; overflow gives infinity, NaN stays NaN.
std::uint16_t half_from_float(float value);
float float_from_half(std::uint16_t bits);

/// Element `index` of `data` as a double (i64 beyond 2^53 loses its low bits).
double read_element(const std::byte* data, messages::element_type type, std::size_t index);
/// Stores a float type's element (f16 rounded) or an integer type's (converted from `value`).
void write_float_element(std::byte* data,
                         messages::element_type type,
                         std::size_t index,
                         double value);
void write_integer_element(std::byte* data,
                           messages::element_type type,
                           std::size_t index,
                           std::int64_t value);

/// A scalar argument's bytes, as the kernel parameter of its type reads them (little-endian,
/// element_size(type) bytes used, the rest zero).
std::array<std::byte, 8> scalar_bytes(const messages::kernel_arg& arg);

} // namespace rpl::workers::kernel_process
