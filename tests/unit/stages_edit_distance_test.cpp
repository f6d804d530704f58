#include <gtest/gtest.h>

#include "stages/search/edit_distance.hpp"

namespace rpl::stages {
namespace {

TEST(stages_edit_distance, counts_insertions_deletions_and_substitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("autotune", "autotune"), 0u);
  EXPECT_EQ(edit_distance("autotun", "autotune"), 1u);
  EXPECT_EQ(edit_distance("profle", "profile"), 1u);
  EXPECT_EQ(edit_distance("TILE_N", "TILE_M"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", "cba"), edit_distance("cba", "abc"));
}

} // namespace
} // namespace rpl::stages
