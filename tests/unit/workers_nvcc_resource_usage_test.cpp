#include <gtest/gtest.h>

#include "workers/compilers/nvcc/nvcc_resource_usage.hpp"

namespace rpl::workers {
namespace {

// Verbatim nvcc 13.0 `--resource-usage` output for two kernels (sm_90).
constexpr const char* ptxas_output = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z3accILi64EEvPf' for 'sm_90'
ptxas info    : Function properties for _Z3accILi64EEvPf
    256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 256 bytes cumulative stack size
ptxas info    : Compile time = 28.826 ms
ptxas info    : Compiling entry function '_Z2scPffi' for 'sm_90'
ptxas info    : Function properties for _Z2scPffi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 1 barriers, 4096 bytes smem, 16 bytes lmem
ptxas info    : Compile time = 2.286 ms
)";

TEST(workers_nvcc_resource_usage, parses_every_kernel_of_a_ptxas_report) {
  const auto kernels = parse_ptxas_resource_usage(ptxas_output);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "_Z3accILi64EEvPf");
  EXPECT_EQ(kernels[0].arch, "sm_90");
  EXPECT_EQ(kernels[0].registers, 32u);
  EXPECT_EQ(kernels[0].stack_bytes, 256u);
  EXPECT_EQ(kernels[0].spill_store_bytes, 8u);
  EXPECT_EQ(kernels[0].spill_load_bytes, 12u);
  EXPECT_EQ(kernels[0].shared_bytes, 0u);
  EXPECT_EQ(kernels[1].name, "_Z2scPffi");
  EXPECT_EQ(kernels[1].registers, 8u);
  EXPECT_EQ(kernels[1].barriers, 1u);
  EXPECT_EQ(kernels[1].shared_bytes, 4096u);
  EXPECT_EQ(kernels[1].local_bytes, 16u);
}

TEST(workers_nvcc_resource_usage, ignores_unrelated_output) {
  EXPECT_TRUE(parse_ptxas_resource_usage("").empty());
  EXPECT_TRUE(
      parse_ptxas_resource_usage("k.cu(3): warning: something\nUsed 9 registers\n").empty());
}

} // namespace
} // namespace rpl::workers
