// device_api over the CUDA driver API (libcuda only: the lane never loads the CUDA runtime).
// One device, its primary context, the legacy default stream.
#include <cstdio>
#include <string>

#include <cuda.h>

#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process {

namespace {

/// Errors after which the context cannot be used again (CUDA documents these as persisting
/// until the process ends).
bool is_sticky(CUresult result) {
  switch (result) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED: return true;
  default: return false;
  }
}

device_status check(CUresult result) {
  if (result == CUDA_SUCCESS)
    return std::nullopt;
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr)
    name = "CUDA_ERROR_UNKNOWN";
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr)
    text = "";
  return device_error{name, text, is_sticky(result)};
}

/// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi and NVML print it.
std::string format_uuid(const CUuuid& uuid) {
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += hex;
    if (i == 3 || i == 5 || i == 7 || i == 9)
      out += '-';
  }
  return out;
}

int attribute(CUdevice device, CUdevice_attribute which) {
  int value = 0;
  if (cuDeviceGetAttribute(&value, which, device) != CUDA_SUCCESS)
    return 0;
  return value;
}

class cuda_device_api final : public device_api {
public:
  ~cuda_device_api() override {
    if (context_ != nullptr)
      cuDevicePrimaryCtxRelease(device_);
  }

  device_status open(int ordinal, messages::kernel_device& info) override {
    info.api = "cuda";
    info.ordinal = ordinal;
    if (auto e = check(cuInit(0)))
      return e;
    if (auto e = check(cuDeviceGet(&device_, ordinal)))
      return e;
    if (auto e = check(cuDevicePrimaryCtxRetain(&context_, device_)))
      return e;
    if (auto e = check(cuCtxSetCurrent(context_)))
      return e;
    describe(info);
    return std::nullopt;
  }

  device_status load_module(const std::string& image, module_handle& module) override {
    CUmodule m = nullptr;
    device_status e = check(cuModuleLoadData(&m, image.c_str())); // c_str: PTX needs the NUL
    module = m;
    return e;
  }

  void unload_module(module_handle module) override {
    cuModuleUnload(static_cast<CUmodule>(module));
  }

  device_status find_function(module_handle module,
                              const std::string& symbol,
                              function_handle& function) override {
    CUfunction f = nullptr;
    device_status e = check(cuModuleGetFunction(&f, static_cast<CUmodule>(module), symbol.c_str()));
    function = f;
    return e;
  }

  device_status allocate(std::size_t bytes, device_pointer& pointer) override {
    CUdeviceptr p = 0;
    device_status e = check(cuMemAlloc(&p, bytes));
    pointer = static_cast<device_pointer>(p);
    return e;
  }

  void release(device_pointer pointer) override { cuMemFree(static_cast<CUdeviceptr>(pointer)); }

  device_status
  copy_to_device(device_pointer target, const void* source, std::size_t bytes) override {
    return check(cuMemcpyHtoD(static_cast<CUdeviceptr>(target), source, bytes));
  }

  device_status copy_to_host(void* target, device_pointer source, std::size_t bytes) override {
    return check(cuMemcpyDtoH(target, static_cast<CUdeviceptr>(source), bytes));
  }

  device_status
  copy_on_device(device_pointer target, device_pointer source, std::size_t bytes) override {
    return check(cuMemcpyDtoDAsync(static_cast<CUdeviceptr>(target),
                                   static_cast<CUdeviceptr>(source), bytes, nullptr));
  }

  device_status fill_zero(device_pointer target, std::size_t bytes) override {
    return check(cuMemsetD8Async(static_cast<CUdeviceptr>(target), 0, bytes, nullptr));
  }

  device_status
  copy_to_host_queued(void* target, device_pointer source, std::size_t bytes) override {
    return check(cuMemcpyDtoHAsync(target, static_cast<CUdeviceptr>(source), bytes, nullptr));
  }

  device_status allocate_host(std::size_t bytes, void*& pointer) override {
    pointer = nullptr;
    return check(cuMemAllocHost(&pointer, bytes));
  }

  void release_host(void* pointer) override { cuMemFreeHost(pointer); }

  device_status
  launch(function_handle function, const launch_shape& shape, void** params) override {
    auto f = static_cast<CUfunction>(function);
    // Above 48 KiB of dynamic shared memory a kernel must opt in, once per size.
    if (shape.shared_bytes > 48u * 1024u) {
      if (auto e = check(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            static_cast<int>(shape.shared_bytes))))
        return e;
    }
    return check(cuLaunchKernel(f, shape.grid.x, shape.grid.y, shape.grid.z, shape.block.x,
                                shape.block.y, shape.block.z, shape.shared_bytes, nullptr, params,
                                nullptr));
  }

  device_status synchronize() override { return check(cuCtxSynchronize()); }

  device_status create_event(event_handle& event) override {
    CUevent e = nullptr;
    device_status status = check(cuEventCreate(&e, CU_EVENT_DEFAULT));
    event = e;
    return status;
  }

  void destroy_event(event_handle event) override { cuEventDestroy(static_cast<CUevent>(event)); }

  device_status record_event(event_handle event) override {
    return check(cuEventRecord(static_cast<CUevent>(event), nullptr));
  }

  device_status wait_event(event_handle event) override {
    return check(cuEventSynchronize(static_cast<CUevent>(event)));
  }

  device_status elapsed_ns(event_handle start, event_handle stop, std::int64_t& ns) override {
    float ms = 0.0f;
    device_status e =
        check(cuEventElapsedTime(&ms, static_cast<CUevent>(start), static_cast<CUevent>(stop)));
    ns = static_cast<std::int64_t>(static_cast<double>(ms) * 1e6 + 0.5);
    return e;
  }

private:
  void describe(messages::kernel_device& info) const {
    char name[256] = {};
    if (cuDeviceGetName(name, sizeof name, device_) == CUDA_SUCCESS)
      info.name = name;
    CUuuid uuid{};
    if (cuDeviceGetUuid(&uuid, device_) == CUDA_SUCCESS)
      info.uuid = format_uuid(uuid);
    info.arch = "sm_" +
                std::to_string(attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)) +
                std::to_string(attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    info.sm_clock_khz = attribute(device_, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    std::size_t bytes = 0;
    if (cuDeviceTotalMem(&bytes, device_) == CUDA_SUCCESS)
      info.memory_bytes = bytes;
  }

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

} // namespace

std::unique_ptr<device_api> make_device_api() {
  return std::make_unique<cuda_device_api>();
}

} // namespace rpl::workers::kernel_process
