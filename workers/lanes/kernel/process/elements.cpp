#include "workers/lanes/kernel/process/elements.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace rpl::workers::kernel_process {

namespace {

template <class T> T load(const std::byte* data, std::size_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

template <class T> void store(std::byte* data, std::size_t index, T value) {
  std::memcpy(data + index * sizeof(T), &value, sizeof(T));
}

} // namespace

std::uint16_t half_from_float(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exponent = (bits >> 23) & 0xffu;
  std::uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) // infinity, or NaN kept quiet and non-zero
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa != 0 ? 0x200u : 0u));
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31)
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) { // subnormal half, or zero
    if (e < -10)
      return sign;
    mantissa |= 0x800000u;
    const auto shift = static_cast<std::uint32_t>(14 - e);
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u) != 0))
      ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0))
    ++half; // a carry into the exponent is the correct rounding (up to infinity)
  return static_cast<std::uint16_t>(sign | half);
}

float float_from_half(std::uint16_t bits) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31)
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

double read_element(const std::byte* data, messages::element_type type, std::size_t index) {
  using messages::element_type;
  switch (type) {
  case element_type::f32: return static_cast<double>(load<float>(data, index));
  case element_type::f64: return load<double>(data, index);
  case element_type::i32: return static_cast<double>(load<std::int32_t>(data, index));
  case element_type::i64: return static_cast<double>(load<std::int64_t>(data, index));
  case element_type::u32: return static_cast<double>(load<std::uint32_t>(data, index));
  case element_type::f16:
    return static_cast<double>(float_from_half(load<std::uint16_t>(data, index)));
  }
  return 0.0;
}

void write_float_element(std::byte* data,
                         messages::element_type type,
                         std::size_t index,
                         double value) {
  using messages::element_type;
  switch (type) {
  case element_type::f32: store(data, index, static_cast<float>(value)); break;
  case element_type::f64: store(data, index, value); break;
  case element_type::f16: store(data, index, half_from_float(static_cast<float>(value))); break;
  case element_type::i32:
  case element_type::i64:
  case element_type::u32:
    write_integer_element(data, type, index, static_cast<std::int64_t>(value));
    break;
  }
}

void write_integer_element(std::byte* data,
                           messages::element_type type,
                           std::size_t index,
                           std::int64_t value) {
  using messages::element_type;
  switch (type) {
  case element_type::i32: store(data, index, static_cast<std::int32_t>(value)); break;
  case element_type::i64: store(data, index, value); break;
  case element_type::u32: store(data, index, static_cast<std::uint32_t>(value)); break;
  case element_type::f32:
  case element_type::f64:
  case element_type::f16: write_float_element(data, type, index, static_cast<double>(value)); break;
  }
}

std::array<std::byte, 8> scalar_bytes(const messages::kernel_arg& arg) {
  std::array<std::byte, 8> bytes{};
  if (messages::is_float(arg.type))
    write_float_element(bytes.data(), arg.type, 0, arg.float_value);
  else
    write_integer_element(bytes.data(), arg.type, 0, arg.int_value);
  return bytes;
}

} // namespace rpl::workers::kernel_process
