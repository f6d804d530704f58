#include <set>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "stages/optimize/validation_plan.hpp"

namespace rpl::stages::optimize {
namespace {

const char* gemm_launch = R"({
  "kernel": "k", "problem": {"M": 2048, "N": 2048, "K": 7},
  "grid": ["(N + 63) / 64", "(M + 63) / 64"], "block": [256],
  "args": [
    {"name": "A", "kind": "buffer", "type": "f32", "count": "M * K",
     "init": {"random": {"seed": 1, "min": -1, "max": 1}}},
    {"name": "C", "kind": "buffer", "type": "f32", "count": "M * N", "init": "zeros",
     "output": true, "tolerance": {"abs": 1e-3, "rel": 1e-3}},
    {"name": "m", "kind": "scalar", "type": "i32", "value": "M"}]})";

std::int64_t problem(const launch_spec& spec, const std::string& name) {
  for (const auto& [n, v] : spec.problem) {
    if (n == name) {
      return std::get<std::int64_t>(v);
    }
  }
  return -1;
}

TEST(validation_plan, covers_launch_size_twice_a_smaller_an_odd_a_tiny_and_a_misaligned_case) {
  const auto spec = parse_launch_spec(gemm_launch, "t.launch.json", "/base");
  const auto cases = validation_cases(spec, 1);
  ASSERT_EQ(cases.size(), 6u);
  EXPECT_EQ(problem(cases[0].spec, "M"), 2048);
  EXPECT_EQ(problem(cases[1].spec, "M"), 2048);
  EXPECT_EQ(problem(cases[2].spec, "M"), 1024);
  EXPECT_EQ(problem(cases[3].spec, "M"), 1537);
  EXPECT_EQ(problem(cases[3].spec, "K") % 2, 1);
  EXPECT_NE(cases[3].label.find("odd size"), std::string::npos);
  // Under one block, and misaligned: optional (dropped where the original cannot run them).
  EXPECT_EQ(cases[4].size, validation_size::tiny);
  EXPECT_EQ(problem(cases[4].spec, "M"), tiny_size_limit);
  EXPECT_TRUE(cases[4].optional);
  EXPECT_EQ(cases[5].size, validation_size::misaligned);
  EXPECT_EQ(problem(cases[5].spec, "M"), 1537);
  EXPECT_EQ(cases[5].offset_bytes, 4u);
  EXPECT_TRUE(cases[5].optional);
  EXPECT_NE(cases[5].label.find("4 bytes off their alignment"), std::string::npos);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(cases[i].optional) << cases[i].label;
    EXPECT_EQ(cases[i].offset_bytes, 0u) << cases[i].label;
  }
  // Every case resolves: the sizes are still valid launches.
  for (const auto& c : cases) {
    EXPECT_TRUE(resolve_launch(c.spec, {}).ok()) << c.label;
  }
}

TEST(validation_plan, the_hazard_case_is_small_and_odd_for_the_slow_sanitizer_tools) {
  const auto spec = parse_launch_spec(gemm_launch, "t.launch.json", "/base");
  const auto hazard = hazard_case(spec, 1);
  EXPECT_EQ(problem(hazard.spec, "M"), 97);
  EXPECT_NE(hazard.label.find("hazard size M=97"), std::string::npos) << hazard.label;
  EXPECT_TRUE(resolve_launch(hazard.spec, {}).ok());
}

TEST(validation_plan, uses_fresh_seeds_and_poisons_zeroed_outputs) {
  const auto spec = parse_launch_spec(gemm_launch, "t.launch.json", "/base");
  const auto cases = validation_cases(spec, 1);
  std::set<std::uint64_t> seeds;
  for (const auto& c : cases) {
    const auto& a = c.spec.args[0];
    const auto& out = c.spec.args[1];
    EXPECT_NE(a.init.seed, 1u) << "the launch file's own seed would be the benchmark's input";
    EXPECT_EQ(out.init.fill, messages::buffer_fill::random) << c.label;
    seeds.insert(a.init.seed);
  }
  EXPECT_EQ(seeds.size(), cases.size());
  // Another run seed gives other inputs; the same one the same.
  EXPECT_NE(validation_cases(spec, 2)[0].spec.args[0].init.seed, cases[0].spec.args[0].init.seed);
  EXPECT_EQ(validation_cases(spec, 1)[0].spec.args[0].init.seed, cases[0].spec.args[0].init.seed);
}

TEST(validation_plan, odd_and_smaller_sizes) {
  EXPECT_EQ(odd_size(2048), 1537);
  EXPECT_EQ(odd_size(7), 5);
  EXPECT_EQ(odd_size(4), 3);
  EXPECT_EQ(odd_size(3), 1);
  EXPECT_EQ(odd_size(1), 1);
  EXPECT_EQ(smaller_size(2048), 1024);
  EXPECT_EQ(tiny_size(2048), 7);
  EXPECT_EQ(hazard_size(2048), 97);
  EXPECT_EQ(hazard_size(100), 75) << "the odd size, when under the limit";
  EXPECT_EQ(tiny_size(3), 3);
  EXPECT_EQ(smaller_size(1), 1);
}

} // namespace
} // namespace rpl::stages::optimize
