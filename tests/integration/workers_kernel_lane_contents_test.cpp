// The kernel lane's random initial contents (workers/lanes/kernel/process/initial_contents.hpp)
// generated on several threads: every element is still the seeded generator's own draw. An
// integration test because the fill starts threads (the label ThreadSanitizer runs in CI).

#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "workers/lanes/kernel/process/elements.hpp"
#include "workers/lanes/kernel/process/initial_contents.hpp"

namespace rpl::workers::kernel_process {
namespace {

using messages::element_type;

TEST(workers_kernel_lane_contents,
     large_random_contents_filled_in_parallel_are_the_sequential_ones) {
  // Over 1 Mi elements per thread the fill is split over threads: every element must still be
  // the generator's (i + 1)-th draw, chunk boundaries included.
  messages::buffer_init init;
  init.fill = messages::buffer_fill::random;
  init.seed = 7;
  init.min = -2.0;
  init.max = 5.0;
  const std::size_t count = (std::size_t{3} << 20) + 5;
  const auto big = random_contents(element_type::f32, count, init);
  std::uint64_t state = init.seed;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const auto expected = static_cast<float>(init.min + static_cast<double>(z >> 11) * 0x1.0p-53 *
                                                            (init.max - init.min));
    wrong += static_cast<float>(read_element(big.data(), element_type::f32, i)) != expected;
  }
  EXPECT_EQ(wrong, 0u);
  const auto small = random_contents(element_type::f32, 1000, init);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), big.begin()));
  const auto ints = random_contents(element_type::i64, (std::size_t{2} << 20) + 3, init);
  const auto ints_head = random_contents(element_type::i64, 4096, init);
  EXPECT_TRUE(std::equal(ints_head.begin(), ints_head.end(), ints.begin()));
}

} // namespace
} // namespace rpl::workers::kernel_process
