#include "workers/lanes/kernel/process/output_readback.hpp"

namespace rpl::workers::kernel_process {

output_readback::~output_readback() {
  for (slot& s : slots_)
    if (s.host != nullptr)
      api_.release_host(s.host);
  if (ready_ != nullptr)
    api_.destroy_event(ready_);
}

device_status output_readback::queue(const std::vector<messages::kernel_arg>& args,
                                     const device_buffers& buffers) {
  if (ready_ == nullptr)
    if (device_status error = api_.create_event(ready_))
      return error;
  if (slots_.size() < args.size())
    slots_.resize(args.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slot& s = slots_[i];
    s.bytes = 0;
    if (i >= args.size() || args[i].kind != messages::kernel_arg_kind::buffer || !args[i].output)
      continue;
    const std::size_t bytes = args[i].count * messages::element_size(args[i].type);
    if (s.capacity < bytes) {
      if (s.host != nullptr)
        api_.release_host(s.host);
      s.host = nullptr;
      s.capacity = 0;
      if (device_status error = api_.allocate_host(bytes, s.host))
        return error;
      s.capacity = bytes;
    }
    if (device_status error = api_.copy_to_host_queued(s.host, buffers.pointer(i), bytes))
      return error;
    s.bytes = bytes;
  }
  return api_.record_event(ready_);
}

device_status output_readback::wait() {
  return api_.wait_event(ready_);
}

std::span<const std::byte> output_readback::output(std::size_t index) const {
  if (index >= slots_.size() || slots_[index].bytes == 0)
    return {};
  return {static_cast<const std::byte*>(slots_[index].host), slots_[index].bytes};
}

} // namespace rpl::workers::kernel_process
