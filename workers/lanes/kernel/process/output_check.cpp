#include "workers/lanes/kernel/process/output_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "workers/lanes/kernel/process/elements.hpp"

namespace rpl::workers::kernel_process {

bool within_tolerance(double value, double expected, const messages::value_tolerance& tolerance) {
  if (std::isnan(value) || std::isnan(expected))
    return std::isnan(value) && std::isnan(expected);
  if (value == expected) // also equal infinities, whose difference would be NaN
    return true;
  if (std::isinf(value) || std::isinf(expected)) // an infinite bound would let anything pass
    return false;
  return std::fabs(value - expected) <= tolerance.abs + tolerance.rel * std::fabs(expected);
}

namespace {

/// The element loop over typed values: `value_at(i)` and `expected_at(i)` read element i.
template <class Read>
std::optional<messages::kernel_mismatch> compare_elements(const messages::kernel_arg& arg,
                                                          std::size_t count,
                                                          const Read& value_at,
                                                          const Read& expected_at,
                                                          bool exact_bits,
                                                          std::span<const std::byte> value,
                                                          std::span<const std::byte> expected) {
  const std::size_t size = messages::element_size(arg.type);
  messages::kernel_mismatch mismatch;
  mismatch.buffer = arg.name;
  mismatch.compared = count;
  for (std::size_t i = 0; i < count; ++i) {
    const bool same =
        exact_bits ? std::memcmp(value.data() + i * size, expected.data() + i * size, size) == 0
                   : within_tolerance(value_at(i), expected_at(i), arg.tolerance);
    if (same)
      continue;
    if (mismatch.count++ == 0) {
      mismatch.index = i;
      mismatch.value = value_at(i);
      mismatch.expected = expected_at(i);
    }
  }
  if (mismatch.count == 0)
    return std::nullopt;
  return mismatch;
}

/// Elements of a host type T read straight from the bytes (no per-element type switch).
template <class T> struct typed_reader {
  const std::byte* bytes;
  double operator()(std::size_t i) const {
    T v;
    std::memcpy(&v, bytes + i * sizeof(T), sizeof(T));
    return static_cast<double>(v);
  }
};

struct generic_reader {
  const std::byte* bytes;
  messages::element_type type;
  double operator()(std::size_t i) const { return read_element(bytes, type, i); }
};

} // namespace

std::optional<messages::kernel_mismatch> compare_output(const messages::kernel_arg& arg,
                                                        std::span<const std::byte> value,
                                                        std::span<const std::byte> expected,
                                                        bool bitwise) {
  const std::size_t size = messages::element_size(arg.type);
  const std::size_t count = std::min(value.size(), expected.size()) / size;
  const bool exact = bitwise || (!messages::is_float(arg.type) && arg.tolerance.abs == 0.0 &&
                                 arg.tolerance.rel == 0.0);
  if (count > 0 && std::memcmp(value.data(), expected.data(), count * size) == 0) {
    // Bit-identical: equal under any tolerance, except a NaN (which matches only a NaN: it does).
    return std::nullopt;
  }
  switch (arg.type) {
  case messages::element_type::f32:
    return compare_elements(arg, count, typed_reader<float>{value.data()},
                            typed_reader<float>{expected.data()}, exact, value, expected);
  case messages::element_type::f64:
    return compare_elements(arg, count, typed_reader<double>{value.data()},
                            typed_reader<double>{expected.data()}, exact, value, expected);
  default:
    return compare_elements(arg, count, generic_reader{value.data(), arg.type},
                            generic_reader{expected.data(), arg.type}, exact, value, expected);
  }
}

} // namespace rpl::workers::kernel_process
