// analyze's "memory: uncoalesced" class on a real GPU: `rocm-perf profile --backend cuda
// --counters roofline` of tests/gpu/coalescing_app.cu (a row gather and a unit-stride copy of the
// same 64 MiB) records Nsight Compute's L1 sectors and requests per global access; analysis.json
// classes the gather "memory: uncoalesced" with its sectors per request as evidence, and the copy
// otherwise. Skips without an NVIDIA GPU, the tracer, ncu or the program (-DRPL_BUILD_CUDA=ON).

#include <string>

#include <gtest/gtest.h>

#include "gpu/cuda_programs.hpp"
#include "workers/tracers/ncu/ncu_counter_recorder.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
using rpl::testing::temp_dir;

#ifndef RPL_COALESCING_APP
#define RPL_COALESCING_APP nullptr
#endif

const nlohmann::json* uc_kernel_named(const nlohmann::json& analysis, const std::string& name) {
  for (const auto& k : analysis["kernels"])
    if (k["name"].get<std::string>().find(name) != std::string::npos)
      return &k;
  return nullptr;
}

TEST(uncoalesced_class_gpu, a_row_gather_is_uncoalesced_and_a_copy_is_not) {
  fs::path rocm_perf;
  const std::string why = rpl::testing::cuda_profile_unavailable(rocm_perf);
  if (!why.empty())
    GTEST_SKIP() << why;
  if (!workers::find_ncu({}))
    GTEST_SKIP() << "no Nsight Compute (ncu on PATH, NCU or /usr/local/cuda/bin/ncu)";
  std::vector<std::string> tried;
  const fs::path app = rpl::testing::find_cuda_program("RPL_COALESCING_APP", "coalescing_app",
                                                       RPL_COALESCING_APP, tried);
  if (app.empty())
    GTEST_SKIP() << "no coalescing_app (tests/gpu/coalescing_app.cu, built with "
                    "-DRPL_BUILD_CUDA=ON, or set RPL_COALESCING_APP); looked at "
                 << nlohmann::json(tried).dump();
  temp_dir dir;
  const auto run = rpl::testing::run_profile(
      rocm_perf, dir / "out", {"--runs", "1", "--counters", "roofline"}, {app.string()});
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.output;
  const auto analysis =
      nlohmann::json::parse(rpl::testing::read_text(dir / "out" / "analysis.json"));
  std::cout << "[uncoalesced_class_gpu] " << analysis["kernels"].dump(2) << "\n";
  const auto* gather = uc_kernel_named(analysis, "row_gather");
  const auto* copy = uc_kernel_named(analysis, "unit_copy");
  ASSERT_NE(gather, nullptr) << analysis.dump(2);
  ASSERT_NE(copy, nullptr) << analysis.dump(2);
  const auto& g = (*gather)["bottleneck"];
  EXPECT_EQ(g["class"], "memory_uncoalesced") << g.dump(2) << "\nprofile's output:\n"
                                              << run.outcome.output;
  ASSERT_TRUE(g["measured"].contains("sectors_per_request")) << g.dump(2);
  EXPECT_GT(g["measured"]["sectors_per_request"].get<double>(), 16) << g.dump(2);
  const auto& c = (*copy)["bottleneck"];
  EXPECT_NE(c["class"], "memory_uncoalesced") << c.dump(2);
  ASSERT_TRUE(c["measured"].contains("sectors_per_request")) << c.dump(2);
  EXPECT_LE(c["measured"]["sectors_per_request"].get<double>(), 8) << c.dump(2);
}

} // namespace
} // namespace rpl
