#include "workers/lanes/kernel/process/output_check.hpp"

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

std::optional<messages::kernel_mismatch> compare_output(const messages::kernel_arg& arg,
                                                        const std::vector<std::byte>& value,
                                                        const std::vector<std::byte>& expected) {
  const std::size_t size = messages::element_size(arg.type);
  const std::size_t count = std::min(value.size(), expected.size()) / size;
  const bool exact =
      !messages::is_float(arg.type) && arg.tolerance.abs == 0.0 && arg.tolerance.rel == 0.0;
  messages::kernel_mismatch mismatch;
  mismatch.buffer = arg.name;
  mismatch.compared = count;
  for (std::size_t i = 0; i < count; ++i) {
    const bool same =
        exact ? std::memcmp(value.data() + i * size, expected.data() + i * size, size) == 0
              : within_tolerance(read_element(value.data(), arg.type, i),
                                 read_element(expected.data(), arg.type, i), arg.tolerance);
    if (same)
      continue;
    if (mismatch.count++ == 0) {
      mismatch.index = i;
      mismatch.value = read_element(value.data(), arg.type, i);
      mismatch.expected = read_element(expected.data(), arg.type, i);
    }
  }
  if (mismatch.count == 0)
    return std::nullopt;
  return mismatch;
}

} // namespace rpl::workers::kernel_process
