#include <gtest/gtest.h>

#include "workers/compilers/host/host_rules.hpp"

namespace rpl::workers {
namespace {

using argv_t = std::vector<std::string>;

TEST(workers_host_rules, matches_host_compilers_and_their_versioned_names) {
  const host_rules host;
  for (const std::string name : {"g++", "gcc", "clang++", "clang", "c++", "cc", "/usr/bin/g++",
                                 "g++-12", "clang++-17", "gcc-13.2"}) {
    EXPECT_TRUE(host.matches({name, "x.cpp"})) << name;
  }
  for (const std::string name :
       {"nvcc", "hipcc", "g++-", "g++-x", "clang-format", "ccache", "true"}) {
    EXPECT_FALSE(host.matches({name, "x.cpp"})) << name;
  }
  EXPECT_FALSE(host.matches({}));
}

TEST(workers_host_rules, change_nothing) {
  const host_rules host;
  const argv_t argv = {"g++", "-O2", "x.cpp", "-o", "/tmp/a"};
  EXPECT_EQ(host.worker_argv(argv), argv);
  EXPECT_TRUE(host.names_target(argv));
  EXPECT_TRUE(host.target_argv("sm_90").empty());
  EXPECT_TRUE(host.default_target_argv(argv, "gfx942").empty());
  EXPECT_TRUE(host.parse_resource_usage("ptxas info    : Used 8 registers\n").empty());
}

} // namespace
} // namespace rpl::workers
