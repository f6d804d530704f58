#include "workers/lanes/kernel/process/device_buffers.hpp"

namespace rpl::workers::kernel_process {

device_buffers::~device_buffers() {
  release_all();
}

void device_buffers::release_all() {
  for (slot& s : slots_) {
    if (s.pointer != 0)
      api_.release(s.pointer);
    s = slot{};
  }
}

device_status device_buffers::prepare(const std::vector<messages::kernel_arg>& args,
                                      std::uint32_t& allocations) {
  if (slots_.size() > args.size()) {
    for (std::size_t i = args.size(); i < slots_.size(); ++i)
      if (slots_[i].pointer != 0)
        api_.release(slots_[i].pointer);
  }
  slots_.resize(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool buffer = args[i].kind == messages::kernel_arg_kind::buffer;
    const std::size_t bytes = buffer ? args[i].count * messages::element_size(args[i].type) : 0;
    slot& s = slots_[i];
    if (s.bytes == bytes)
      continue;
    if (s.pointer != 0)
      api_.release(s.pointer);
    s = slot{};
    if (bytes == 0)
      continue;
    if (device_status error = api_.allocate(bytes, s.pointer))
      return error;
    s.bytes = bytes;
    ++allocations;
  }
  return std::nullopt;
}

device_pointer device_buffers::pointer(std::size_t index) const {
  return index < slots_.size() ? slots_[index].pointer : 0;
}

} // namespace rpl::workers::kernel_process
