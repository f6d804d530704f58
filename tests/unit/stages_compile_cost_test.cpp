// stages/search/compile_cost.hpp: the longest builds are recognised from their neighbours.

#include <gtest/gtest.h>

#include "stages/search/compile_cost.hpp"
#include "stages/search/space.hpp"

namespace rpl::stages {
namespace {

space tiles() {
  return parse_space(R"({"params": {"TILE": [16, 32, 64, 128], "UNROLL": [1, 2, 4, 8]}})",
                     "tiles.json");
}

std::size_t index_of(const space& s, int tile, int unroll) {
  for (std::size_t i = 0; i < s.configurations.size(); ++i) {
    const auto& c = s.configurations[i];
    if (to_string(c.params.at(0).second) == std::to_string(tile) &&
        to_string(c.params.at(1).second) == std::to_string(unroll))
      return i;
  }
  return s.configurations.size();
}

TEST(stages_compile_cost, nothing_known_is_zero_for_all_so_the_search_order_stands) {
  const space s = tiles();
  compile_cost_model model(s.configurations);
  EXPECT_EQ(model.expected(0), 0.0);
  EXPECT_EQ(model.expected(s.configurations.size() + 5), 0.0);
}

TEST(stages_compile_cost, a_big_tile_is_expected_to_take_as_long_as_its_compiled_neighbours) {
  const space s = tiles();
  compile_cost_model model(s.configurations, 2);
  // Compile time grows with the tile: 16 -> 1 s, 32 -> 1.5 s, 128 -> 4 s.
  model.observe(index_of(s, 16, 1), 1.0);
  model.observe(index_of(s, 16, 8), 1.1);
  model.observe(index_of(s, 32, 2), 1.5);
  model.observe(index_of(s, 128, 1), 4.0);
  model.observe(index_of(s, 128, 4), 4.2);
  EXPECT_GT(model.expected(index_of(s, 128, 2)), 3.5);
  EXPECT_LT(model.expected(index_of(s, 16, 2)), 1.6);
  EXPECT_GT(model.expected(index_of(s, 64, 8)), model.expected(index_of(s, 16, 4)));
  EXPECT_GT(model.expected(index_of(s, 128, 8)), model.expected(index_of(s, 32, 8)));
  EXPECT_EQ(model.observed(), 5u);
}

} // namespace
} // namespace rpl::stages
