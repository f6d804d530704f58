#include <gtest/gtest.h>

#include "stages/trace/counter_values.hpp"

namespace rpl::stages::rocpd {
namespace {

TEST(stages_kernel_key, tools_spellings_of_one_kernel_share_a_key) {
  EXPECT_EQ(kernel_key("void sgemm_tiled(const float *, float *, int)"), "sgemm_tiled");
  EXPECT_EQ(kernel_key("sgemm_tiled(float const*, float*, int)"), "sgemm_tiled");
  EXPECT_EQ(kernel_key("sgemm_tiled"), "sgemm_tiled");
  EXPECT_EQ(kernel_key("void gemm<64, (int)3>(float*)"), "gemm<64,(int)3>");
}

TEST(stages_kernel_key, a_kernel_in_an_anonymous_namespace_keeps_its_name) {
  // The name starts with a parenthesis: the argument list is the group that ends it, so two
  // kernels of one anonymous namespace do not collapse into one empty key.
  EXPECT_EQ(kernel_key("(anonymous namespace)::row_gather(float const*, float*)"),
            "(anonymousnamespace)::row_gather");
  EXPECT_EQ(kernel_key("(anonymous namespace)::unit_copy(const float *, float *)"),
            "(anonymousnamespace)::unit_copy");
  EXPECT_EQ(kernel_key("<unnamed>::row_gather(const float *, float *)"),
            "(anonymousnamespace)::row_gather");
  EXPECT_EQ(kernel_key("void ns::(anonymous namespace)::k<(anonymous namespace)::tag>(int)"),
            "ns::(anonymousnamespace)::k<(anonymousnamespace)::tag>");
}

TEST(stages_kernel_key, counters_are_found_by_the_bare_function_name_when_it_is_unique) {
  // Nsight Compute's CSV names a kernel by its function name; the trace by its whole name.
  std::map<std::string, kernel_counters> counters;
  counters[kernel_key("row_gather")].name = "row_gather";
  counters[kernel_key("unit_copy")].name = "unit_copy";
  const auto* gather =
      find_kernel_counters(counters, "(anonymous namespace)::row_gather(float const*, float*)");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->name, "row_gather");
  EXPECT_EQ(find_kernel_counters(counters, "void unit_copy(float const*, float*)")->name,
            "unit_copy");
  EXPECT_EQ(find_kernel_counters(counters, "other(int)"), nullptr);
  // Two kernels of the same bare name in different namespaces: not told apart, none taken.
  counters[kernel_key("a::scale(float*)")].name = "a::scale";
  counters[kernel_key("b::scale(float*)")].name = "b::scale";
  EXPECT_EQ(find_kernel_counters(counters, "scale(float*)"), nullptr);
  EXPECT_EQ(find_kernel_counters(counters, "a::scale(float*)")->name, "a::scale");
}

} // namespace
} // namespace rpl::stages::rocpd
