#include <gtest/gtest.h>

#include "workers/compilers/nvcc/nvcc_rules.hpp"

namespace rpl::workers {
namespace {

using argv_t = std::vector<std::string>;

TEST(workers_nvcc_rules, matches_nvcc_by_file_name_only) {
  const nvcc_rules nvcc;
  EXPECT_TRUE(nvcc.matches({"nvcc", "k.cu"}));
  EXPECT_TRUE(nvcc.matches({"/usr/local/cuda/bin/nvcc"}));
  EXPECT_FALSE(nvcc.matches({"hipcc", "k.cu"}));
  EXPECT_FALSE(nvcc.matches({"nvcc.real"}));
  EXPECT_FALSE(nvcc.matches({}));
}

TEST(workers_nvcc_rules, the_worker_asks_for_the_resource_report_once) {
  const nvcc_rules nvcc;
  EXPECT_EQ(nvcc.worker_argv({"nvcc", "-O3", "k.cu", "-o", "/tmp/a"}),
            (argv_t{"nvcc", "-O3", "k.cu", "-o", "/tmp/a", "--resource-usage"}));
  EXPECT_EQ(nvcc.worker_argv({"nvcc", "--resource-usage", "k.cu"}),
            (argv_t{"nvcc", "--resource-usage", "k.cu"}));
  EXPECT_EQ(nvcc.worker_argv({"nvcc", "-res-usage", "k.cu"}),
            (argv_t{"nvcc", "-res-usage", "k.cu"}));
}

TEST(workers_nvcc_rules, knows_every_way_of_naming_an_architecture) {
  const nvcc_rules nvcc;
  EXPECT_FALSE(nvcc.names_target({"nvcc", "-O3", "k.cu"}));
  for (const std::string flag :
       {"-arch=sm_90", "-arch", "--gpu-architecture=sm_80", "-gencode=arch=compute_90a,code=sm_90a",
        "--generate-code", "-code=sm_90"}) {
    EXPECT_TRUE(nvcc.names_target({"nvcc", flag, "k.cu"})) << flag;
  }
  EXPECT_EQ(nvcc.target_argv("sm_90"), argv_t{"-arch=sm_90"});
  EXPECT_EQ(nvcc.target_argv("sm_90a"), argv_t{"-arch=sm_90a"});
  EXPECT_TRUE(nvcc.target_argv("gfx942").empty());
  EXPECT_TRUE(nvcc.target_argv("sm_").empty());
}

TEST(workers_nvcc_rules, parses_the_ptxas_report) {
  const auto kernels = nvcc_rules().parse_resource_usage(
      "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1kPf\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 12 registers, used 0 barriers, 1024 bytes smem\n");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].name, "_Z1kPf");
  EXPECT_EQ(kernels[0].arch, "sm_90");
  EXPECT_EQ(kernels[0].registers, 12u);
  EXPECT_EQ(kernels[0].shared_bytes, 1024u);
}

} // namespace
} // namespace rpl::workers
