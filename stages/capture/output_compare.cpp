#include "stages/capture/output_compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace rpl::stages::capture {

compare_result compare_output(std::span<const std::uint8_t> expected,
                              std::span<const std::uint8_t> actual,
                              const std::optional<float_tolerance>& tolerance) {
  compare_result result;
  if (expected.size() == actual.size() &&
      (expected.empty() || std::memcmp(expected.data(), actual.data(), expected.size()) == 0)) {
    result.compared_bytes = expected.size(); // the common case, at memcmp's speed
    return result;
  }
  const std::size_t common = std::min(expected.size(), actual.size());
  result.compared_bytes = std::max(expected.size(), actual.size());
  auto note = [&](std::uint64_t offset, std::uint64_t count) {
    if (result.mismatched == 0) {
      result.first_mismatch_offset = offset;
    }
    result.mismatched += count;
  };
  if (!tolerance) {
    for (std::size_t i = 0; i < common; ++i) {
      if (expected[i] != actual[i]) {
        note(i, 1);
      }
    }
  } else {
    const std::size_t elements = common / sizeof(float);
    for (std::size_t i = 0; i < elements; ++i) {
      float e = 0;
      float a = 0;
      std::memcpy(&e, expected.data() + i * sizeof(float), sizeof e);
      std::memcpy(&a, actual.data() + i * sizeof(float), sizeof a);
      if (std::memcmp(&e, &a, sizeof e) == 0) {
        continue; // the same bits (NaN included)
      }
      const double limit = tolerance->abs + tolerance->rel * std::fabs(static_cast<double>(e));
      if (!(std::fabs(static_cast<double>(a) - static_cast<double>(e)) <= limit)) {
        note(i * sizeof(float), 1);
      }
    }
    for (std::size_t i = elements * sizeof(float); i < common; ++i) {
      if (expected[i] != actual[i]) {
        note(i, 1); // a tail shorter than a float: bit-exact
      }
    }
  }
  if (expected.size() != actual.size()) {
    note(common, result.compared_bytes - common);
  }
  return result;
}

std::string describe(const std::optional<float_tolerance>& tolerance) {
  if (!tolerance) {
    return "bit-exact";
  }
  std::ostringstream text;
  text << "float32 within abs " << tolerance->abs << " + rel " << tolerance->rel;
  return text.str();
}

} // namespace rpl::stages::capture
