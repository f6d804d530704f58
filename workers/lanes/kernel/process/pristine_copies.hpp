#pragma once
/// Device copies of the buffers' initial contents, made once per problem: before each checked
/// launch the lane restores its buffers from them on the device (a queued copy, or zeroing for a
/// zero fill) instead of uploading the host's bytes again for every candidate (48 MB for a
/// 2048^3 SGEMM, some 5 ms a candidate over PCIe against microseconds on the device). Where a copy
/// cannot be allocated the buffer is uploaded from the host as before.

#include <cstdint>
#include <string>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"
#include "workers/lanes/kernel/process/device_buffers.hpp"
#include "workers/lanes/kernel/process/initial_contents.hpp"

namespace rpl::workers::kernel_process {

class pristine_copies {
public:
  explicit pristine_copies(device_api& api) : api_(api) {}
  ~pristine_copies();
  pristine_copies(const pristine_copies&) = delete;
  pristine_copies& operator=(const pristine_copies&) = delete;

  /// Queues the restore of every buffer argument into `buffers`, first making (or remaking) the
  /// pristine copy of any whose contents changed. `contents_error` is set (and nullopt returned)
  /// when the host contents cannot be made (an unreadable file).
  device_status restore(const std::vector<messages::kernel_arg>& args,
                        const device_buffers& buffers,
                        initial_contents& contents,
                        std::string& contents_error,
                        std::uint32_t& allocations);
  void release_all();

private:
  struct slot {
    std::string key; ///< contents_key of what the copy holds; empty: none
    device_pointer pointer = 0;
    std::size_t bytes = 0;
  };
  device_api& api_;
  std::vector<slot> slots_;
};

} // namespace rpl::workers::kernel_process
