#include "workers/devices/nvml_probe.hpp"

#include <dlfcn.h>
#include <map>
#include <mutex>

namespace rpl::workers {

namespace {

// NVML's C interface, declared here from nvml.h (CUDA 12/13) so that no NVIDIA header or library
// is needed to build: every handle is an opaque pointer, every result an int (0 = NVML_SUCCESS).
using nvml_device = void*;
struct nvml_violation_time {
  unsigned long long reference_time; // µs timestamp
  unsigned long long violation_time; // ns of violation since the driver loaded
};
constexpr int nvml_success = 0;
constexpr int nvml_clock_sm = 1;          // NVML_CLOCK_SM
constexpr int nvml_perf_policy_power = 0; // NVML_PERF_POLICY_POWER
constexpr int nvml_perf_policy_thermal = 1;

using init_fn = int (*)();
using shutdown_fn = int (*)();
using handle_by_uuid_fn = int (*)(const char*, nvml_device*);
using clock_info_fn = int (*)(nvml_device, int, unsigned int*);
using reasons_fn = int (*)(nvml_device, unsigned long long*);
using violation_fn = int (*)(nvml_device, int, nvml_violation_time*);

class nvml_probe final : public gpu_clock_probe {
public:
  explicit nvml_probe(void* library) : library_(library) {}
  ~nvml_probe() override {
    if (shutdown_ != nullptr) {
      shutdown_();
    }
    dlclose(library_);
  }
  nvml_probe(const nvml_probe&) = delete;
  nvml_probe& operator=(const nvml_probe&) = delete;

  bool bind(std::string& why_not) {
    const auto init = symbol<init_fn>("nvmlInit_v2");
    shutdown_ = symbol<shutdown_fn>("nvmlShutdown");
    by_uuid_ = symbol<handle_by_uuid_fn>("nvmlDeviceGetHandleByUUID");
    clock_info_ = symbol<clock_info_fn>("nvmlDeviceGetClockInfo");
    // The newer name first (drivers from 535 on), the older one for older drivers.
    reasons_ = symbol<reasons_fn>("nvmlDeviceGetCurrentClocksEventReasons");
    if (reasons_ == nullptr) {
      reasons_ = symbol<reasons_fn>("nvmlDeviceGetCurrentClocksThrottleReasons");
    }
    violation_ = symbol<violation_fn>("nvmlDeviceGetViolationStatus");
    if (init == nullptr || shutdown_ == nullptr || by_uuid_ == nullptr || clock_info_ == nullptr ||
        reasons_ == nullptr) {
      why_not = "libnvidia-ml.so.1 lacks the NVML functions this probe reads";
      shutdown_ = nullptr;
      return false;
    }
    if (const int status = init(); status != nvml_success) {
      why_not = "nvmlInit_v2 failed with NVML error " + std::to_string(status);
      shutdown_ = nullptr;
      return false;
    }
    return true;
  }

  std::optional<gpu_clock_reading> read(const std::string& uuid) override {
    nvml_device device = nullptr;
    {
      // Only the handle map is shared: NVML's calls are thread-safe, and one GPU's poller must
      // not wait for another's 1.5 ms reading.
      std::lock_guard lock(mutex_);
      if (const auto found = devices_.find(uuid); found != devices_.end()) {
        device = found->second;
      } else if (by_uuid_(uuid.c_str(), &device) == nvml_success) {
        devices_.emplace(uuid, device);
      } else {
        return std::nullopt;
      }
    }
    gpu_clock_reading reading;
    unsigned int mhz = 0;
    unsigned long long reasons = 0;
    if (clock_info_(device, nvml_clock_sm, &mhz) != nvml_success ||
        reasons_(device, &reasons) != nvml_success) {
      return std::nullopt;
    }
    reading.sm_mhz = mhz;
    reading.reasons = reasons;
    reading.power_violation_ns = violation(device, nvml_perf_policy_power);
    reading.thermal_violation_ns = violation(device, nvml_perf_policy_thermal);
    return reading;
  }

private:
  template <typename F> F symbol(const char* name) {
    return reinterpret_cast<F>(dlsym(library_, name));
  }
  std::int64_t violation(nvml_device device, int policy) {
    nvml_violation_time time{};
    if (violation_ == nullptr || violation_(device, policy, &time) != nvml_success) {
      return -1;
    }
    return static_cast<std::int64_t>(time.violation_time);
  }

  void* library_;
  shutdown_fn shutdown_ = nullptr;
  handle_by_uuid_fn by_uuid_ = nullptr;
  clock_info_fn clock_info_ = nullptr;
  reasons_fn reasons_ = nullptr;
  violation_fn violation_ = nullptr;
  std::mutex mutex_;
  std::map<std::string, nvml_device> devices_;
};

} // namespace

std::optional<std::vector<nvml_gpu>> list_nvml_gpus() {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr)
    return std::nullopt;
  using count_fn = int (*)(unsigned int*);
  using by_index_fn = int (*)(unsigned int, nvml_device*);
  using text_fn = int (*)(nvml_device, char*, unsigned int);
  using index_fn = int (*)(nvml_device, unsigned int*);
  using capability_fn = int (*)(nvml_device, int*, int*);
  const auto init = reinterpret_cast<init_fn>(dlsym(library, "nvmlInit_v2"));
  const auto shutdown = reinterpret_cast<shutdown_fn>(dlsym(library, "nvmlShutdown"));
  const auto count = reinterpret_cast<count_fn>(dlsym(library, "nvmlDeviceGetCount_v2"));
  const auto by_index =
      reinterpret_cast<by_index_fn>(dlsym(library, "nvmlDeviceGetHandleByIndex_v2"));
  const auto name = reinterpret_cast<text_fn>(dlsym(library, "nvmlDeviceGetName"));
  const auto uuid = reinterpret_cast<text_fn>(dlsym(library, "nvmlDeviceGetUUID"));
  const auto index = reinterpret_cast<index_fn>(dlsym(library, "nvmlDeviceGetIndex"));
  const auto capability =
      reinterpret_cast<capability_fn>(dlsym(library, "nvmlDeviceGetCudaComputeCapability"));
  std::optional<std::vector<nvml_gpu>> gpus;
  if (init != nullptr && shutdown != nullptr && count != nullptr && by_index != nullptr &&
      name != nullptr && uuid != nullptr && index != nullptr && init() == nvml_success) {
    unsigned int n = 0;
    if (count(&n) == nvml_success) {
      gpus.emplace();
      for (unsigned int i = 0; i < n; ++i) {
        nvml_device device = nullptr;
        char name_text[256] = {};
        char uuid_text[96] = {};
        unsigned int at = 0;
        if (by_index(i, &device) != nvml_success ||
            name(device, name_text, sizeof name_text) != nvml_success ||
            uuid(device, uuid_text, sizeof uuid_text) != nvml_success ||
            index(device, &at) != nvml_success) {
          gpus.reset(); // a partial list would hide a GPU: let nvidia-smi answer instead
          break;
        }
        nvml_gpu gpu{static_cast<int>(at), name_text, uuid_text};
        if (capability != nullptr)
          capability(device, &gpu.compute_major, &gpu.compute_minor);
        gpus->push_back(std::move(gpu));
      }
    }
    shutdown();
  }
  dlclose(library);
  return gpus;
}

std::shared_ptr<gpu_clock_probe> open_nvml_probe(std::string& why_not) {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    why_not = std::string("cannot load libnvidia-ml.so.1 (the NVIDIA driver's NVML): ") +
              (error != nullptr ? error : "not found");
    return nullptr;
  }
  auto probe = std::make_shared<nvml_probe>(library);
  if (!probe->bind(why_not)) {
    return nullptr;
  }
  return probe;
}

} // namespace rpl::workers
