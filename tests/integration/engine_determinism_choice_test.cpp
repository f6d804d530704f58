// Which builds the determinism check compiles twice: by build key, so a rerun checks the same
// ones, and about the fraction asked for.
#include <gtest/gtest.h>

#include "engine/autotune/determinism_check_service.hpp"
#include "stages/search/candidate_key.hpp"

namespace rpl::engine {
namespace {

TEST(determinism_choice, follows_the_fraction_and_the_key) {
  int chosen = 0;
  for (int i = 0; i < 4000; ++i) {
    const auto key = stages::content_hash("build " + std::to_string(i));
    const bool once = determinism_check_service::chosen(key, 0.25);
    EXPECT_EQ(once, determinism_check_service::chosen(key, 0.25)) << key;
    EXPECT_TRUE(determinism_check_service::chosen(key, 1.0));
    EXPECT_FALSE(determinism_check_service::chosen(key, 0.0));
    // A larger fraction keeps every build a smaller one chose.
    if (once) {
      EXPECT_TRUE(determinism_check_service::chosen(key, 0.5)) << key;
    }
    chosen += once ? 1 : 0;
  }
  EXPECT_NEAR(chosen, 1000, 120);
  EXPECT_FALSE(determinism_check_service::chosen("not hex", 0.5));
}

} // namespace
} // namespace rpl::engine
