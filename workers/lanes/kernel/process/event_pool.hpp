#pragma once
/// Start/stop event pairs for timing launches, created once and reused for every candidate so
/// that sampling creates nothing in the steady state.

#include <cstddef>
#include <vector>

#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process {

class event_pool {
public:
  explicit event_pool(device_api& api) : api_(api) {}
  ~event_pool();
  event_pool(const event_pool&) = delete;
  event_pool& operator=(const event_pool&) = delete;

  /// Makes sure at least `pairs` pairs exist.
  device_status reserve(std::size_t pairs);
  event_handle start(std::size_t pair) const { return starts_[pair]; }
  event_handle stop(std::size_t pair) const { return stops_[pair]; }

private:
  device_api& api_;
  std::vector<event_handle> starts_;
  std::vector<event_handle> stops_;
};

} // namespace rpl::workers::kernel_process
