#pragma once
/// The checked launch's outputs, read back into page-locked host memory by copies queued right
/// after that launch, so that the host compares them with the reference while the GPU runs the
/// candidate's timed launches (which queue behind the copies and cannot overwrite them first).
/// The host buffers and the event are kept across candidates.

#include <cstddef>
#include <span>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"
#include "workers/lanes/kernel/process/device_buffers.hpp"

namespace rpl::workers::kernel_process {

class output_readback {
public:
  explicit output_readback(device_api& api) : api_(api) {}
  ~output_readback();
  output_readback(const output_readback&) = delete;
  output_readback& operator=(const output_readback&) = delete;

  /// Queues a copy of every output buffer of `args` and an event behind them.
  device_status queue(const std::vector<messages::kernel_arg>& args, const device_buffers& buffers);
  /// Waits for the queued copies (the checked launch's fault, if any, surfaces here).
  device_status wait();
  /// Output argument `index` as read back (empty for other arguments).
  std::span<const std::byte> output(std::size_t index) const;

private:
  struct slot {
    void* host = nullptr;
    std::size_t capacity = 0;
    std::size_t bytes = 0; ///< read back this time; 0: not an output
  };
  device_api& api_;
  std::vector<slot> slots_;
  event_handle ready_ = nullptr;
};

} // namespace rpl::workers::kernel_process
