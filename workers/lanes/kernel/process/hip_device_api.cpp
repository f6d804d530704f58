// device_api over HIP's module API (hipModuleLoadData, hipModuleLaunchKernel, hipEvent timing),
// built against Debian's HIP headers and libamdhip64 (ROCm 5.2). It compiles and starts here,
// where no AMD GPU exists (the hello then says the device is unavailable); it has never launched
// a kernel on an AMD GPU: none is available to this project.
#include <cctype>
#include <cstdio>
#include <string>

#include <hip/hip_runtime_api.h>

#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process {

namespace {

/// Errors after which HIP's context cannot be used again.
bool is_sticky(hipError_t result) {
  switch (result) {
  case hipErrorIllegalAddress:
  case hipErrorLaunchTimeOut:
  case hipErrorLaunchFailure:
  case hipErrorAssert:
  case hipErrorECCNotCorrectable:
  case hipErrorContextIsDestroyed: return true;
  default: return false;
  }
}

device_status check(hipError_t result) {
  if (result == hipSuccess)
    return std::nullopt;
  const char* name = hipGetErrorName(result);
  const char* text = hipGetErrorString(result);
  return device_error{name != nullptr ? name : "hipErrorUnknown", text != nullptr ? text : "",
                      is_sticky(result)};
}

/// ROCm fills hipUUID with printable characters; anything else is shown as hex.
std::string format_uuid(const hipUUID& uuid) {
  std::string printable;
  std::string hex;
  char byte[3];
  for (const char c : uuid.bytes) {
    if (c != '\0')
      printable += c;
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(c));
    hex += byte;
  }
  for (const char c : printable)
    if (!std::isprint(static_cast<unsigned char>(c)))
      return "GPU-" + hex;
  return printable.rfind("GPU-", 0) == 0 ? printable : "GPU-" + printable;
}

class hip_device_api final : public device_api {
public:
  device_status open(int ordinal, messages::kernel_device& info) override {
    info.api = "hip";
    info.ordinal = ordinal;
    if (auto e = check(hipInit(0)))
      return e;
    int count = 0;
    if (auto e = check(hipGetDeviceCount(&count)))
      return e;
    if (ordinal >= count)
      return device_error{"hipErrorInvalidDevice",
                          "device " + std::to_string(ordinal) + " requested, " +
                              std::to_string(count) + " visible",
                          false};
    if (auto e = check(hipSetDevice(ordinal)))
      return e;
    describe(ordinal, info);
    return std::nullopt;
  }

  device_status load_module(const std::string& image, module_handle& module) override {
    hipModule_t m = nullptr;
    device_status e = check(hipModuleLoadData(&m, image.data()));
    module = m;
    return e;
  }

  void unload_module(module_handle module) override {
    (void)hipModuleUnload(static_cast<hipModule_t>(module));
  }

  device_status find_function(module_handle module,
                              const std::string& symbol,
                              function_handle& function) override {
    hipFunction_t f = nullptr;
    device_status e =
        check(hipModuleGetFunction(&f, static_cast<hipModule_t>(module), symbol.c_str()));
    function = f;
    return e;
  }

  device_status allocate(std::size_t bytes, device_pointer& pointer) override {
    void* p = nullptr;
    device_status e = check(hipMalloc(&p, bytes));
    pointer = reinterpret_cast<device_pointer>(p);
    return e;
  }

  void release(device_pointer pointer) override { (void)hipFree(as_pointer(pointer)); }

  device_status
  copy_to_device(device_pointer target, const void* source, std::size_t bytes) override {
    // ROCm 5.2 declares the source non-const; it only reads it.
    return check(hipMemcpyHtoD(as_pointer(target), const_cast<void*>(source), bytes));
  }

  device_status copy_to_host(void* target, device_pointer source, std::size_t bytes) override {
    return check(hipMemcpyDtoH(target, as_pointer(source), bytes));
  }

  device_status
  copy_on_device(device_pointer target, device_pointer source, std::size_t bytes) override {
    return check(hipMemcpyDtoDAsync(as_pointer(target), as_pointer(source), bytes, nullptr));
  }

  device_status fill_zero(device_pointer target, std::size_t bytes) override {
    return check(hipMemsetD8Async(as_pointer(target), 0, bytes, nullptr));
  }

  device_status
  copy_to_host_queued(void* target, device_pointer source, std::size_t bytes) override {
    return check(hipMemcpyDtoHAsync(target, as_pointer(source), bytes, nullptr));
  }

  device_status allocate_host(std::size_t bytes, void*& pointer) override {
    pointer = nullptr;
    return check(hipHostMalloc(&pointer, bytes, 0));
  }

  void release_host(void* pointer) override { (void)hipHostFree(pointer); }

  device_status
  launch(function_handle function, const launch_shape& shape, void** params) override {
    return check(hipModuleLaunchKernel(
        static_cast<hipFunction_t>(function), shape.grid.x, shape.grid.y, shape.grid.z,
        shape.block.x, shape.block.y, shape.block.z, shape.shared_bytes, nullptr, params, nullptr));
  }

  device_status synchronize() override { return check(hipDeviceSynchronize()); }

  device_status create_event(event_handle& event) override {
    hipEvent_t e = nullptr;
    device_status status = check(hipEventCreate(&e));
    event = e;
    return status;
  }

  void destroy_event(event_handle event) override {
    (void)hipEventDestroy(static_cast<hipEvent_t>(event));
  }

  device_status record_event(event_handle event) override {
    return check(hipEventRecord(static_cast<hipEvent_t>(event), nullptr));
  }

  device_status wait_event(event_handle event) override {
    return check(hipEventSynchronize(static_cast<hipEvent_t>(event)));
  }

  device_status elapsed_ns(event_handle start, event_handle stop, std::int64_t& ns) override {
    float ms = 0.0f;
    device_status e = check(
        hipEventElapsedTime(&ms, static_cast<hipEvent_t>(start), static_cast<hipEvent_t>(stop)));
    ns = static_cast<std::int64_t>(static_cast<double>(ms) * 1e6 + 0.5);
    return e;
  }

private:
  static hipDeviceptr_t as_pointer(device_pointer pointer) {
    return reinterpret_cast<hipDeviceptr_t>(pointer);
  }

  static void describe(int ordinal, messages::kernel_device& info) {
    hipDeviceProp_t props{};
    if (hipGetDeviceProperties(&props, ordinal) == hipSuccess) {
      info.name = props.name;
      info.arch = props.gcnArchName;
      info.memory_bytes = props.totalGlobalMem;
    }
    hipUUID uuid{};
    if (hipDeviceGetUuid(&uuid, ordinal) == hipSuccess)
      info.uuid = format_uuid(uuid);
    int khz = 0;
    if (hipDeviceGetAttribute(&khz, hipDeviceAttributeClockRate, ordinal) == hipSuccess)
      info.sm_clock_khz = khz;
  }
};

} // namespace

std::unique_ptr<device_api> make_device_api() {
  return std::make_unique<hip_device_api>();
}

} // namespace rpl::workers::kernel_process
