// NVML through workers/devices/nvml_probe.hpp on this host's NVIDIA GPU: a reading of every GPU
// nvidia-smi lists, with a plausible SM clock. Reads only. Skips without a GPU.

#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "workers/devices/nvidia_gpu.hpp"
#include "workers/devices/nvml_probe.hpp"

namespace rpl::workers {
namespace {

TEST(workers_nvml_probe, reads_the_sm_clock_and_reasons_of_every_listed_gpu) {
  if (!nvidia_gpu_present()) {
    GTEST_SKIP() << "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
  }
  std::string why_not;
  const auto probe = open_nvml_probe(why_not);
  ASSERT_NE(probe, nullptr) << why_not;
  const auto gpus = list_nvidia_gpus();
  ASSERT_FALSE(gpus.empty());
  for (const auto& gpu : gpus) {
    const auto reading = probe->read(gpu.uuid);
    ASSERT_TRUE(reading) << gpu.uuid;
    EXPECT_GT(reading->sm_mhz, 0u) << gpu.name;
    EXPECT_LT(reading->sm_mhz, 5000u) << gpu.name;
    std::cout << gpu.name << " " << gpu.uuid << ": SM " << reading->sm_mhz << " MHz, reasons 0x"
              << std::hex << reading->reasons << std::dec << ", power violation "
              << reading->power_violation_ns << " ns, thermal " << reading->thermal_violation_ns
              << " ns\n";
  }
  EXPECT_FALSE(probe->read("GPU-00000000-0000-0000-0000-000000000000")) << "an unknown GPU";
}

TEST(workers_nvml_probe, without_a_gpu_or_driver_it_says_why_not) {
  if (nvidia_gpu_present()) {
    GTEST_SKIP() << "this host has an NVIDIA GPU: the other test covers it";
  }
  std::string why_not;
  const auto probe = open_nvml_probe(why_not);
  if (probe == nullptr) {
    EXPECT_NE(why_not.find("libnvidia-ml.so.1"), std::string::npos) << why_not;
  }
}

} // namespace
} // namespace rpl::workers
