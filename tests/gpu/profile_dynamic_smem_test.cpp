// Occupancy in `rocm-perf profile --backend cuda` counts the launch's dynamic shared memory: the
// tracer records it per dispatch and the report's occupancy gives the same blocks per SM as
// cudaOccupancyMaxActiveBlocksPerMultiprocessor for the same launch. tests/gpu/dynamic_smem_app.cu
// launches one kernel per size (0, 1, 16, 48, 100 KiB dynamic; 8 KiB static + 40 KiB dynamic, 128
// threads) and, with --query, prints what the CUDA runtime says of each. Skips without an NVIDIA
// GPU, the tracer or the program (built only with -DRPL_BUILD_CUDA=ON).

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/cuda_programs.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
using rpl::testing::temp_dir;

#ifndef RPL_DYNAMIC_SMEM_APP
#define RPL_DYNAMIC_SMEM_APP nullptr
#endif

const nlohmann::json* kernel_named(const nlohmann::json& report, const std::string& name) {
  for (const auto& k : report["kernels"]) {
    // Display names are demangled: "void dyn_smem<16>(float*, unsigned int)".
    if (k["name"].get<std::string>().find(name + "(") != std::string::npos)
      return &k;
  }
  return nullptr;
}

TEST(profile_dynamic_smem, occupancy_matches_the_cuda_runtime_for_dynamic_shared_memory) {
  fs::path rocm_perf;
  const std::string why = rpl::testing::cuda_profile_unavailable(rocm_perf);
  if (!why.empty())
    GTEST_SKIP() << why;
  std::vector<std::string> tried;
  const fs::path app = rpl::testing::find_cuda_program("RPL_DYNAMIC_SMEM_APP", "dynamic_smem_app",
                                                       RPL_DYNAMIC_SMEM_APP, tried);
  if (app.empty())
    GTEST_SKIP() << "no dynamic_smem_app (tests/gpu/dynamic_smem_app.cu, built with "
                    "-DRPL_BUILD_CUDA=ON, or set RPL_DYNAMIC_SMEM_APP); looked at "
                 << nlohmann::json(tried).dump();

  // What the CUDA runtime says of each launch.
  workers::child_options query;
  query.argv = {app.string(), "--query"};
  query.max_output_bytes = 1 << 20;
  const auto answered = workers::run_child(query, std::chrono::minutes(1));
  if (answered.exit_code == 77)
    GTEST_SKIP() << "no CUDA device: " << answered.output;
  ASSERT_TRUE(answered.succeeded()) << answered.output;
  std::vector<nlohmann::json> expected;
  std::istringstream lines(answered.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{')
      expected.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(expected.size(), 6u) << answered.output;

  temp_dir dir;
  const auto run =
      rpl::testing::run_profile(rocm_perf, dir / "out", {"--runs", "1"}, {app.string()});
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.output;
  ASSERT_TRUE(run.report.is_object()) << run.outcome.output;
  EXPECT_EQ(run.report["partial"], false);

  std::size_t compared = 0;
  for (const auto& e : expected) {
    const std::string name = e["kernel"];
    const nlohmann::json* k = kernel_named(run.report, name);
    ASSERT_NE(k, nullptr) << name << " is not in the report:\n" << run.report["kernels"].dump(2);
    ASSERT_TRUE((*k)["occupancy"].is_object()) << name << ": " << k->dump(2);
    const auto& occupancy = (*k)["occupancy"];
    const auto static_smem = e["static_smem"].get<long long>();
    const auto dynamic_smem = e["dynamic_smem"].get<long long>();
    SCOPED_TRACE(name + ": " + e.dump() + "\nreport: " + k->dump());
    EXPECT_EQ((*k)["dispatches"], 3);
    EXPECT_EQ((*k)["resources"]["lds_bytes"], static_smem); // the symbol: static only
    // CUPTI records the registers as allocated: cudaFuncGetAttributes' count rounded up to the
    // sm_90 allocation granule of 8 per thread (seen on an H100: 10 and 13 both recorded as 16).
    const int regs = e["regs"].get<int>();
    EXPECT_EQ((*k)["resources"]["vgpr"], (regs + 7) / 8 * 8);
    EXPECT_EQ(occupancy["lds_bytes"], static_smem + dynamic_smem); // the launch: dynamic too
    EXPECT_EQ(occupancy["threads_per_block"], e["block"]);
    EXPECT_EQ(occupancy["workgroups_per_cu"], e["blocks_per_sm"]);
    if (static_smem + dynamic_smem >= 40 * 1024) {
      EXPECT_EQ(occupancy["limiter"], "shared_memory");
    }
    ++compared;
  }
  std::cout << "profile occupancy vs runtime (dynamic shared memory): " << compared
            << " kernels compared on " << expected.front().value("device", std::string("?"))
            << "\n";
}

} // namespace
} // namespace rpl
