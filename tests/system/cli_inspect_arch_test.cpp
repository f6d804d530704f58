// inspect --arch against the code object's vendor: an NVIDIA model for an AMD code object is bad
// input (exit 2 with a fix), never an abort.

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "support/hip_code_object.hpp"
#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

TEST(cli_inspect_arch, an_nvidia_model_for_an_amd_code_object_is_refused_with_a_fix) {
  if (!std::filesystem::exists("/usr/bin/hipcc")) {
    GTEST_SKIP() << "hipcc is not installed (scripts/install-deps installs Debian's hipcc)";
  }
  temp_dir dir;
  rpl::testing::write_file(dir / "k.hip", R"(#include <hip/hip_runtime.h>
__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)");
  const auto built = rpl::testing::compile_hsaco(dir.path(), 2min);
  ASSERT_TRUE(std::filesystem::exists(dir / "k.hsaco")) << built.output;

  const auto nvidia = run_rocm_perf({"inspect", "--arch", "sm_90", (dir / "k.hsaco").string()});
  EXPECT_EQ(nvidia.exit_code, 2) << nvidia.output;
  EXPECT_NE(nvidia.output.find("NVIDIA target"), std::string::npos) << nvidia.output;
  EXPECT_NE(nvidia.output.find("fix: --arch with a gfx target"), std::string::npos);

  const auto amd = run_rocm_perf({"inspect", "--arch", "gfx942", (dir / "k.hsaco").string()});
  EXPECT_EQ(amd.exit_code, 0) << amd.output;
  EXPECT_NE(amd.output.find("occupancy on gfx942"), std::string::npos) << amd.output;
}

} // namespace
} // namespace rpl
