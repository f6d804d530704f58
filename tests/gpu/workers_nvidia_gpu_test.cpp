// This host's NVIDIA GPU as workers/devices/nvidia_gpu.hpp sees it. Skips without one.

#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "stages/hardware/arch_model.hpp"
#include "workers/devices/nvidia_gpu.hpp"

namespace rpl::workers {
namespace {

TEST(workers_nvidia_gpu, a_present_gpu_has_an_architecture_with_a_model) {
  if (!nvidia_gpu_present()) {
    GTEST_SKIP() << "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
  }
  const std::string arch = local_nvidia_arch();
  EXPECT_TRUE(std::regex_match(arch, std::regex("sm_[0-9]{2,3}"))) << "'" << arch << "'";
  // The GPUs we run on (H100, H200: sm_90; A100: sm_80) all have an occupancy model.
  EXPECT_NO_THROW(stages::load_arch(arch)) << arch;
}

} // namespace
} // namespace rpl::workers
