#include "workers/lanes/kernel/process/event_pool.hpp"

namespace rpl::workers::kernel_process {

event_pool::~event_pool() {
  for (event_handle e : starts_)
    api_.destroy_event(e);
  for (event_handle e : stops_)
    api_.destroy_event(e);
}

device_status event_pool::reserve(std::size_t pairs) {
  while (starts_.size() < pairs) {
    event_handle start = nullptr;
    event_handle stop = nullptr;
    if (device_status error = api_.create_event(start))
      return error;
    if (device_status error = api_.create_event(stop)) {
      api_.destroy_event(start);
      return error;
    }
    starts_.push_back(start);
    stops_.push_back(stop);
  }
  return std::nullopt;
}

} // namespace rpl::workers::kernel_process
