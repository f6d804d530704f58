#include <gtest/gtest.h>

#include "workers/compilers/hipcc/hipcc_rules.hpp"

namespace rpl::workers {
namespace {

using argv_t = std::vector<std::string>;

TEST(workers_hipcc_rules, matches_hipcc_by_file_name_only) {
  const hipcc_rules hipcc;
  EXPECT_TRUE(hipcc.matches({"hipcc", "k.hip"}));
  EXPECT_TRUE(hipcc.matches({"/opt/rocm-7.0.0/bin/hipcc"}));
  EXPECT_FALSE(hipcc.matches({"nvcc"}));
  EXPECT_FALSE(hipcc.matches({"clang++", "-x", "hip"}));
  EXPECT_FALSE(hipcc.matches({}));
}

TEST(workers_hipcc_rules, runs_hipcc_unchanged_and_parses_nothing) {
  const hipcc_rules hipcc;
  const argv_t argv = {"hipcc", "-O3", "--offload-arch=gfx942", "k.hip", "-o", "/tmp/a"};
  EXPECT_EQ(hipcc.worker_argv(argv), argv);
  EXPECT_TRUE(hipcc.parse_resource_usage("remark: k.hip:3:0: Function Name: _Z1kPf\n").empty());
}

TEST(workers_hipcc_rules, knows_every_way_of_naming_a_target) {
  const hipcc_rules hipcc;
  EXPECT_FALSE(hipcc.names_target({"hipcc", "-O3", "k.hip", "-o", "a"}));
  for (const argv_t& argv :
       {argv_t{"hipcc", "--offload-arch=gfx942", "k.hip"},
        argv_t{"hipcc", "--offload-arch", "gfx90a", "k.hip"},
        argv_t{"hipcc", "--offload-arch=gfx90a:xnack+", "k.hip"},
        argv_t{"hipcc", "--amdgpu-target=gfx906", "k.hip"},
        argv_t{"hipcc", "--cuda-gpu-arch=gfx1030", "k.hip"},
        argv_t{"hipcc", "-march=gfx1100", "k.hip"}, argv_t{"hipcc", "-mcpu=gfx942", "k.hip"}}) {
    EXPECT_TRUE(hipcc.names_target(argv)) << argv[1];
  }
  // Host-side flags and the negative form name no GPU.
  EXPECT_FALSE(hipcc.names_target({"hipcc", "-march=native", "k.hip"}));
  EXPECT_FALSE(hipcc.names_target({"hipcc", "--no-offload-arch=gfx906", "k.hip"}));
}

TEST(workers_hipcc_rules, names_the_local_gpu_with_offload_arch) {
  const hipcc_rules hipcc;
  EXPECT_EQ(hipcc.target_argv("gfx942"), argv_t{"--offload-arch=gfx942"});
  EXPECT_EQ(hipcc.target_argv("gfx90a:xnack+"), argv_t{"--offload-arch=gfx90a:xnack+"});
  EXPECT_TRUE(hipcc.target_argv("sm_90").empty());
  EXPECT_TRUE(hipcc.target_argv("").empty());
  EXPECT_EQ(hipcc.default_target_argv({"hipcc", "k.hip"}, "gfx1100"),
            argv_t{"--offload-arch=gfx1100"});
  EXPECT_TRUE(hipcc.default_target_argv({"hipcc", "-mcpu=gfx942", "k.hip"}, "gfx1100").empty());
}

} // namespace
} // namespace rpl::workers
