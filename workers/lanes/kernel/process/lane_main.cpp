// rpl-kernel-lane / rpl-kernel-lane-hip: the kernel lane process (workers/lanes/kernel/README.md).
// The device API comes from the one *_device_api.cpp this executable is built with.
#include "workers/lanes/kernel/process/run_lane.hpp"

int main(int argc, char** argv) {
  return rpl::workers::kernel_process::lane_main(argc, argv);
}
