// A stand-in for rpl-kernel-lane on machines without a GPU (CI): the real lane process loop
// (workers/lanes/kernel/process/run_lane.hpp) over a scripted device in host memory
// (fake_device_api.hpp: the code objects and kernel behaviours it understands). It speaks
// the same frames, so tests/integration/workers_kernel_lane_test.cpp drives workers::kernel_lane
// against it: answers, wrong results, crashes, hangs, faults and restarts, all without a GPU.
//
// Environment: FAKE_KERNEL_LANE_START=no_device | crash | hang | garbage (writes an impossible
// frame length first).

#include <unistd.h>

#include "tools/fake_device_api.hpp"
#include "workers/lanes/kernel/process/run_lane.hpp"

namespace rpl::workers::kernel_process {

std::unique_ptr<device_api> make_device_api() {
  return std::make_unique<fake::fake_device_api>();
}

} // namespace rpl::workers::kernel_process

int main(int argc, char** argv) {
  if (rpl::workers::kernel_process::fake::env("FAKE_KERNEL_LANE_START") == "garbage") {
    const char junk[] = "\xff\xff\xff\xffnot a frame";
    [[maybe_unused]] const ssize_t written = ::write(STDOUT_FILENO, junk, sizeof junk - 1);
  }
  return rpl::workers::kernel_process::lane_main(argc, argv);
}
