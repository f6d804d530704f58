#pragma once
/// A launch's parameter block: each buffer's device address or each scalar's bytes, and the
/// array of pointers to them that cuLaunchKernel / hipModuleLaunchKernel read.

#include <array>
#include <cstddef>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/kernel/process/device_buffers.hpp"

namespace rpl::workers::kernel_process {

class kernel_params {
public:
  kernel_params(const std::vector<messages::kernel_arg>& args, const device_buffers& buffers);
  kernel_params(const kernel_params&) = delete; // pointers_ points into values_
  kernel_params& operator=(const kernel_params&) = delete;
  void** data() { return pointers_.data(); }

private:
  std::vector<std::array<std::byte, 8>> values_;
  std::vector<void*> pointers_;
};

} // namespace rpl::workers::kernel_process
