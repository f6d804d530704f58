#include "workers/lanes/kernel/process/pristine_copies.hpp"

namespace rpl::workers::kernel_process {

pristine_copies::~pristine_copies() {
  release_all();
}

void pristine_copies::release_all() {
  for (slot& s : slots_) {
    if (s.pointer != 0)
      api_.release(s.pointer);
    s = slot{};
  }
}

device_status pristine_copies::restore(const std::vector<messages::kernel_arg>& args,
                                       const device_buffers& buffers,
                                       initial_contents& contents,
                                       std::string& contents_error,
                                       std::uint32_t& allocations) {
  if (slots_.size() < args.size())
    slots_.resize(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const messages::kernel_arg& arg = args[i];
    if (arg.kind != messages::kernel_arg_kind::buffer)
      continue;
    const std::size_t bytes = arg.count * messages::element_size(arg.type);
    if (arg.init.fill == messages::buffer_fill::zeros) {
      if (device_status error = api_.fill_zero(buffers.pointer(i), bytes))
        return error;
      continue;
    }
    slot& s = slots_[i];
    const std::string key = contents_key(arg);
    if (s.key != key) {
      const std::vector<std::byte>* host = contents.get(i, arg, contents_error);
      if (host == nullptr)
        return std::nullopt;
      s.key.clear();
      if (s.bytes != bytes && s.pointer != 0) {
        api_.release(s.pointer);
        s = slot{};
      }
      if (s.pointer == 0) {
        if (device_status error = api_.allocate(bytes, s.pointer); error) {
          if (error->sticky)
            return error;
          s = slot{}; // no room for a copy: this buffer is uploaded from the host each time
          if (device_status e = api_.copy_to_device(buffers.pointer(i), host->data(), bytes))
            return e;
          continue;
        }
        s.bytes = bytes;
        ++allocations;
      }
      if (device_status error = api_.copy_to_device(s.pointer, host->data(), bytes))
        return error;
      s.key = key;
    }
    if (device_status error = api_.copy_on_device(buffers.pointer(i), s.pointer, bytes))
      return error;
  }
  return std::nullopt;
}

} // namespace rpl::workers::kernel_process
