#include "workers/lanes/kernel/process/kernel_params.hpp"

#include <cstring>

#include "workers/lanes/kernel/process/elements.hpp"

namespace rpl::workers::kernel_process {

kernel_params::kernel_params(const std::vector<messages::kernel_arg>& args,
                             const device_buffers& buffers)
    : values_(args.size()) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind == messages::kernel_arg_kind::buffer) {
      const device_pointer address = buffers.pointer(i);
      static_assert(sizeof address == 8, "device pointers are passed as 8 bytes");
      std::memcpy(values_[i].data(), &address, sizeof address);
    } else {
      values_[i] = scalar_bytes(args[i]);
    }
    pointers_.push_back(values_[i].data());
  }
}

} // namespace rpl::workers::kernel_process
