#pragma once
/// Device memory for a launch's buffer arguments, kept across candidates: a buffer is allocated
/// again only when its size changes, so measuring candidate after candidate of one launch file
/// allocates nothing (each reply counts what it allocated).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process {

class device_buffers {
public:
  explicit device_buffers(device_api& api) : api_(api) {}
  ~device_buffers();
  device_buffers(const device_buffers&) = delete;
  device_buffers& operator=(const device_buffers&) = delete;

  /// One allocation per buffer argument, by argument index (scalars hold none). Adds the
  /// allocations it made to `allocations`. On failure, what was allocated stays for next time.
  device_status prepare(const std::vector<messages::kernel_arg>& args, std::uint32_t& allocations);
  /// The device address of buffer argument `index` (0 for a scalar).
  device_pointer pointer(std::size_t index) const;
  /// Frees everything, e.g. before retrying an allocation that did not fit.
  void release_all();

private:
  struct slot {
    device_pointer pointer = 0;
    std::size_t bytes = 0;
  };
  device_api& api_;
  std::vector<slot> slots_;
};

} // namespace rpl::workers::kernel_process
