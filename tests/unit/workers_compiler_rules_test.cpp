#include <gtest/gtest.h>

#include "workers/compilers/compiler_rules.hpp"

namespace rpl::workers {
namespace {

using argv_t = std::vector<std::string>;

TEST(workers_compiler_rules, finds_the_rules_by_the_compilers_file_name) {
  EXPECT_EQ(compiler_rules_for({"nvcc", "k.cu"}).name(), "nvcc");
  EXPECT_EQ(compiler_rules_for({"/usr/local/cuda/bin/nvcc", "k.cu"}).name(), "nvcc");
  EXPECT_EQ(compiler_rules_for({"hipcc", "k.hip"}).name(), "hipcc");
  EXPECT_EQ(compiler_rules_for({"/opt/rocm/bin/hipcc", "k.hip"}).name(), "hipcc");
  EXPECT_EQ(compiler_rules_for({"g++", "k.cpp"}).name(), "host");
  EXPECT_EQ(compiler_rules_for({"clang++-17", "k.cpp"}).name(), "host");
}

TEST(workers_compiler_rules, an_unknown_compiler_gets_rules_that_change_nothing) {
  for (const argv_t& argv :
       {argv_t{"true"}, argv_t{"sleep", "30"}, argv_t{"nvcc-wrapper", "k.cu"}, argv_t{}}) {
    const compiler_rules& rules = compiler_rules_for(argv);
    EXPECT_EQ(rules.name(), "host");
    EXPECT_EQ(rules.worker_argv(argv), argv);
    EXPECT_TRUE(rules.default_target_argv(argv, "sm_90").empty());
    EXPECT_TRUE(rules.parse_resource_usage("ptxas info    : Used 8 registers").empty());
  }
}

TEST(workers_compiler_rules, the_lookup_answers_the_same_object_every_time) {
  EXPECT_EQ(&compiler_rules_for({"nvcc"}), &compiler_rules_for({"/x/nvcc", "-O3"}));
  EXPECT_NE(&compiler_rules_for({"nvcc"}), &compiler_rules_for({"hipcc"}));
}

TEST(workers_compiler_rules, the_engine_adds_a_target_only_where_the_build_names_none) {
  EXPECT_EQ(compiler_rules_for({"nvcc", "k.cu"}).default_target_argv({"nvcc", "k.cu"}, "sm_90"),
            argv_t{"-arch=sm_90"});
  EXPECT_TRUE(compiler_rules_for({"nvcc"})
                  .default_target_argv({"nvcc", "-arch=sm_80", "k.cu"}, "sm_90")
                  .empty());
  EXPECT_EQ(compiler_rules_for({"hipcc"}).default_target_argv({"hipcc", "k.hip"}, "gfx942"),
            argv_t{"--offload-arch=gfx942"});
  EXPECT_TRUE(compiler_rules_for({"hipcc"})
                  .default_target_argv({"hipcc", "--offload-arch=gfx90a", "k.hip"}, "gfx942")
                  .empty());
  // A device of the other vendor, or none found, adds nothing.
  EXPECT_TRUE(compiler_rules_for({"nvcc"}).default_target_argv({"nvcc", "k.cu"}, "gfx942").empty());
  EXPECT_TRUE(
      compiler_rules_for({"hipcc"}).default_target_argv({"hipcc", "k.hip"}, "sm_90").empty());
  EXPECT_TRUE(compiler_rules_for({"nvcc"}).default_target_argv({"nvcc", "k.cu"}, "").empty());
}

TEST(workers_compiler_rules, compiler_file_name_is_the_basename_of_argv0) {
  EXPECT_EQ(compiler_file_name({"/usr/bin/g++", "-O2"}), "g++");
  EXPECT_EQ(compiler_file_name({"nvcc"}), "nvcc");
  EXPECT_EQ(compiler_file_name({}), "");
}

} // namespace
} // namespace rpl::workers
