#pragma once
/// The lane process's only contact with a GPU API. Everything else in process/ is plain C++, so
/// one set of sources builds `rpl-kernel-lane` (cuda_device_api.cpp, the CUDA driver API),
/// `rpl-kernel-lane-hip` (hip_device_api.cpp, HIP's module API) and the CI stand-in
/// (tests/tools/fake_kernel_lane.cpp, host memory and scripted kernels). Each executable defines
/// make_device_api(); the calls are the few the lane needs, all on one stream of one device.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "messages/kernel_lane.hpp"

namespace rpl::workers::kernel_process {

/// A failed API call: the API's own error name and text.
struct device_error {
  std::string name;    ///< e.g. CUDA_ERROR_ILLEGAL_ADDRESS, hipErrorInvalidImage
  std::string message; ///< the API's description
  /// The context is unusable from now on (a kernel faulted): the process answers, then exits.
  bool sticky = false;
};

/// nullopt when the call succeeded.
using device_status = std::optional<device_error>;

using device_pointer = std::uint64_t; ///< CUdeviceptr, or a HIP pointer's address
using module_handle = void*;
using function_handle = void*;
using event_handle = void*;

struct launch_shape {
  messages::launch_dims grid;
  messages::launch_dims block;
  std::uint32_t shared_bytes = 0;
};

class device_api {
public:
  virtual ~device_api() = default;
  /// Initialises the API and makes `ordinal` current; fills `device` (api, name, uuid, arch,
  /// clock, memory).
  virtual device_status open(int ordinal, messages::kernel_device& device) = 0;

  /// `image` is the code object's bytes (cubin, fatbin or PTX for CUDA; HSA code object for HIP).
  virtual device_status load_module(const std::string& image, module_handle& module) = 0;
  virtual void unload_module(module_handle module) = 0;
  virtual device_status
  find_function(module_handle module, const std::string& symbol, function_handle& function) = 0;

  virtual device_status allocate(std::size_t bytes, device_pointer& pointer) = 0;
  virtual void release(device_pointer pointer) = 0;
  virtual device_status
  copy_to_device(device_pointer target, const void* source, std::size_t bytes) = 0;
  virtual device_status copy_to_host(void* target, device_pointer source, std::size_t bytes) = 0;

  /// Queued on the lane's stream, in order with the launches (the host does not wait): a device
  /// to device copy, zeroing, and a copy into page-locked host memory from allocate_host().
  virtual device_status
  copy_on_device(device_pointer target, device_pointer source, std::size_t bytes) = 0;
  virtual device_status fill_zero(device_pointer target, std::size_t bytes) = 0;
  virtual device_status
  copy_to_host_queued(void* target, device_pointer source, std::size_t bytes) = 0;
  /// Page-locked host memory (what a queued copy to the host needs).
  virtual device_status allocate_host(std::size_t bytes, void*& pointer) = 0;
  virtual void release_host(void* pointer) = 0;

  /// `params` as cuLaunchKernel takes them: one pointer per kernel parameter, to its value.
  virtual device_status
  launch(function_handle function, const launch_shape& shape, void** params) = 0;
  /// Waits for every launch so far; a kernel's fault surfaces here.
  virtual device_status synchronize() = 0;

  virtual device_status create_event(event_handle& event) = 0;
  virtual void destroy_event(event_handle event) = 0;
  virtual device_status record_event(event_handle event) = 0;
  /// Waits until the work queued before `event`'s record is done; a kernel's fault surfaces here.
  virtual device_status wait_event(event_handle event) = 0;
  /// GPU time between two recorded (and completed) events.
  virtual device_status elapsed_ns(event_handle start, event_handle stop, std::int64_t& ns) = 0;
};

/// The implementation this executable was built with.
std::unique_ptr<device_api> make_device_api();

} // namespace rpl::workers::kernel_process
