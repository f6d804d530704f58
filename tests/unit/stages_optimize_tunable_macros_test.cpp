#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "messages/codec.hpp"
#include "stages/optimize/tunable_macros.hpp"

namespace rpl::stages::optimize {
namespace {

std::vector<messages::tunable_macro> two_knobs() {
  return {{"RPL_A", {0, 2, 4}, 0}, {"RPL_B", {1, 8}, 1}};
}

TEST(tunable_macros, configurations_are_the_product_with_the_defaults_first) {
  const auto space = knob_configurations(two_knobs());
  ASSERT_EQ(space.size(), 6U);
  EXPECT_EQ(describe(space[0]), "RPL_A=0, RPL_B=1");
  EXPECT_EQ(describe(space[1]), "RPL_A=0, RPL_B=8");
  EXPECT_EQ(describe(space[5]), "RPL_A=4, RPL_B=8");
  EXPECT_TRUE(knob_configurations({}).empty());
  EXPECT_TRUE(knob_configurations({{"RPL_A", {}, 0}}).empty());
}

TEST(tunable_macros, values_are_written_into_the_define_lines_only) {
  const std::string text = "#ifndef RPL_A\n#define RPL_A 0\n#endif\n#ifndef RPL_B\n"
                           "#define RPL_B 1\n#endif\nint a = RPL_A; // #define RPL_A 0\n";
  std::string out = text;
  std::string error;
  ASSERT_TRUE(set_knobs(out, two_knobs(), knob_configurations(two_knobs())[5], error)) << error;
  EXPECT_NE(out.find("#define RPL_A 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("#define RPL_B 8\n"), std::string::npos) << out;
  EXPECT_NE(out.find("// #define RPL_A 0\n"), std::string::npos) << out;
}

TEST(tunable_macros, a_knob_defined_twice_or_not_at_all_is_named) {
  std::string error;
  std::string twice = "#define RPL_A 0\n#define RPL_A 0\n#define RPL_B 1\n";
  EXPECT_FALSE(set_knobs(twice, two_knobs(), knob_configurations(two_knobs())[0], error));
  EXPECT_NE(error.find("RPL_A"), std::string::npos);
  std::string missing = "#define RPL_A 0\n";
  EXPECT_FALSE(set_knobs(missing, two_knobs(), knob_configurations(two_knobs())[0], error));
  EXPECT_NE(error.find("RPL_B"), std::string::npos);
}

TEST(tunable_macros, the_block_compiles_to_nothing_at_its_default) {
  const std::string block = unroll_knob_block("RPL_UNROLL_L7", "rpl_unroll_L7", "  ");
  EXPECT_EQ(block, "#ifndef RPL_UNROLL_L7\n#define RPL_UNROLL_L7 0\n#endif\n"
                   "#if RPL_UNROLL_L7 > 0\n  constexpr int rpl_unroll_L7 = RPL_UNROLL_L7;\n"
                   "#pragma unroll rpl_unroll_L7\n#endif\n");
}

TEST(tunable_macros, proposals_carry_their_knobs_over_the_wire) {
  messages::propose_reply reply;
  reply.status = messages::propose_status::ok;
  messages::proposal p;
  p.id = "rule:unroll-knobs:k";
  p.tunables = two_knobs();
  reply.proposals.push_back(p);
  const auto back = messages::decode<messages::propose_reply>(messages::encode(reply));
  ASSERT_EQ(back.proposals.size(), 1U);
  ASSERT_EQ(back.proposals[0].tunables.size(), 2U);
  EXPECT_EQ(back.proposals[0].tunables[1].name, "RPL_B");
  EXPECT_EQ(back.proposals[0].tunables[1].values, (std::vector<std::int64_t>{1, 8}));
  EXPECT_EQ(back.proposals[0].tunables[1].default_value, 1);
}

TEST(tunable_macros, configurations_compare_equal_without_their_values) {
  const std::vector<std::string> names = {"RPL_A", "RPL_B"};
  const std::string a = "x\n#define RPL_A 4\n#define RPL_B 0\n#define RPL_C 1\ny\n";
  const std::string b = "x\n#define RPL_A 8\n#define RPL_B 2\n#define RPL_C 1\ny\n";
  const std::string c = "x\n#define RPL_A 8\n#define RPL_B 2\n#define RPL_C 2\ny\n";
  EXPECT_EQ(without_knob_values(a, names), without_knob_values(b, names));
  EXPECT_EQ(without_knob_values(a, names),
            "x\n#define RPL_A ?\n#define RPL_B ?\n#define RPL_C 1\ny\n");
  EXPECT_NE(without_knob_values(b, names), without_knob_values(c, names))
      << "a macro that is no knob keeps its value";
  EXPECT_EQ(without_knob_values("no newline at the end", names), "no newline at the end");
}

TEST(tunable_macros, knob_uses_must_lie_inside_the_range) {
  const std::string text = "int g[RPL_AB];\n{ RPL_A; RPL_A_X; }\n";
  const std::size_t body = text.find('{');
  EXPECT_TRUE(knobs_used_only_within(text, {"RPL_A"}, body, text.size()))
      << "RPL_AB and RPL_A_X are other words";
  EXPECT_FALSE(knobs_used_only_within(text, {"RPL_AB"}, body, text.size()));
  EXPECT_FALSE(knobs_used_only_within(text, {"RPL_A"}, body, body + 3));
  EXPECT_FALSE(knobs_used_only_within(text, {""}, 0, text.size()));
}

} // namespace
} // namespace rpl::stages::optimize
