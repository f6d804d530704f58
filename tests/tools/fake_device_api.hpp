#pragma once
// The scripted device of the GPU lanes' CI stand-ins (fake_kernel_lane.cpp, fake_replay_lane.cpp):
// device_api over host memory, with kernels read from a text "code object":
//   rpl-fake-module
//   kernel NAME [factor=F] [duration_us=D] [behavior=B]
// Every kernel takes (const float* in, float* out, i32 n) and writes out[i] = in[i] * factor
// (default 1). Each launch advances a fake GPU clock by duration_us (default 100), so event
// samples are exact. behavior: ok (default), crash (SIGSEGV in the launch), hang (never
// finishes), fault (a sticky FAKE_ERROR_ILLEGAL_ADDRESS at the next synchronisation),
// launch_error (a refused launch, not sticky), oob_write / oob_before (right outputs, and a write
// one element past the end / before the start of `out`: only with red zones, which take it),
// write_input (in[0] += 1), nondeterministic (out[0] drifts with the launch count), lazy (skips
// the work, 1 us, when `out` already holds its result), wrong_late (out[0] wrong from the fifth
// launch on). Anything else fails to load with FAKE_ERROR_INVALID_IMAGE.
//
// Environment: FAKE_KERNEL_LANE_START=no_device | crash | hang. The device's name shows
// CUDA_VISIBLE_DEVICES, so tests see what the engine set.

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process::fake {

struct fake_kernel {
  double factor = 1.0;
  std::int64_t duration_ns = 100'000;
  std::string behavior = "ok";
};

struct fake_module {
  std::map<std::string, fake_kernel> kernels;
};

[[noreturn]] inline void hang_forever() {
  while (true)
    std::this_thread::sleep_for(std::chrono::hours(1));
}

inline std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

inline bool parse_kernel(std::istringstream& line, fake_module& module) {
  std::string name;
  line >> name;
  fake_kernel kernel;
  for (std::string word; line >> word;) {
    const auto eq = word.find('=');
    if (eq == std::string::npos)
      return false;
    const std::string key = word.substr(0, eq);
    const std::string value = word.substr(eq + 1);
    if (key == "factor")
      kernel.factor = std::stod(value);
    else if (key == "duration_us")
      kernel.duration_ns = std::stoll(value) * 1000;
    else if (key == "behavior")
      kernel.behavior = value;
    else
      return false;
  }
  module.kernels[name] = kernel;
  return !name.empty();
}

class fake_device_api final : public device_api {
public:
  device_status open(int ordinal, messages::kernel_device& info) override {
    const std::string start = env("FAKE_KERNEL_LANE_START");
    if (start == "crash")
      std::abort();
    if (start == "hang")
      hang_forever();
    if (start == "no_device")
      return device_error{"FAKE_ERROR_NO_DEVICE", "no fake device here", false};
    info.api = "fake";
    info.ordinal = ordinal;
    info.name = "Fake GPU (CUDA_VISIBLE_DEVICES=" + env("CUDA_VISIBLE_DEVICES") + ")";
    info.uuid = "GPU-00000000-0000-0000-0000-00000000fa4e";
    info.arch = "fake_1";
    info.sm_clock_khz = 1'000'000;
    info.memory_bytes = 1u << 30;
    return std::nullopt;
  }

  device_status load_module(const std::string& image, module_handle& module) override {
    auto parsed = std::make_unique<fake_module>();
    std::istringstream text(image);
    std::string line;
    bool ok = std::getline(text, line) && line == "rpl-fake-module";
    while (ok && std::getline(text, line)) {
      std::istringstream words(line);
      std::string first;
      if (!(words >> first))
        continue;
      ok = first == "kernel" && parse_kernel(words, *parsed);
    }
    if (!ok)
      return device_error{"FAKE_ERROR_INVALID_IMAGE", "not a fake module", false};
    module = parsed.release();
    return std::nullopt;
  }

  void unload_module(module_handle module) override { delete static_cast<fake_module*>(module); }

  device_status find_function(module_handle module,
                              const std::string& symbol,
                              function_handle& function) override {
    auto& kernels = static_cast<fake_module*>(module)->kernels;
    const auto found = kernels.find(symbol);
    if (found == kernels.end())
      return device_error{"FAKE_ERROR_NOT_FOUND", "named symbol not found", false};
    function = &found->second;
    return std::nullopt;
  }

  device_status allocate(std::size_t bytes, device_pointer& pointer) override {
    pointer = reinterpret_cast<device_pointer>(std::calloc(bytes, 1));
    return pointer == 0 ? device_status(device_error{"FAKE_ERROR_OUT_OF_MEMORY", "", false})
                        : std::nullopt;
  }

  void release(device_pointer pointer) override { std::free(reinterpret_cast<void*>(pointer)); }

  device_status
  copy_to_device(device_pointer target, const void* source, std::size_t bytes) override {
    std::memcpy(reinterpret_cast<void*>(target), source, bytes);
    return std::nullopt;
  }

  device_status copy_to_host(void* target, device_pointer source, std::size_t bytes) override {
    std::memcpy(target, reinterpret_cast<const void*>(source), bytes);
    return std::nullopt;
  }

  device_status
  copy_on_device(device_pointer target, device_pointer source, std::size_t bytes) override {
    std::memcpy(reinterpret_cast<void*>(target), reinterpret_cast<const void*>(source), bytes);
    return std::nullopt;
  }

  device_status fill_zero(device_pointer target, std::size_t bytes) override {
    std::memset(reinterpret_cast<void*>(target), 0, bytes);
    return std::nullopt;
  }

  device_status
  copy_to_host_queued(void* target, device_pointer source, std::size_t bytes) override {
    return copy_to_host(target, source, bytes);
  }

  device_status allocate_host(std::size_t bytes, void*& pointer) override {
    pointer = std::malloc(bytes == 0 ? 1 : bytes);
    return pointer == nullptr ? device_status(device_error{"FAKE_ERROR_OUT_OF_MEMORY", "", false})
                              : std::nullopt;
  }

  void release_host(void* pointer) override { std::free(pointer); }

  device_status launch(function_handle function, const launch_shape&, void** params) override {
    const auto& kernel = *static_cast<const fake_kernel*>(function);
    if (kernel.behavior == "crash") {
      std::signal(SIGSEGV, SIG_DFL); // a sanitizer's handler would turn it into exit(1)
      std::raise(SIGSEGV);
    }
    if (kernel.behavior == "hang")
      hang_forever();
    if (kernel.behavior == "launch_error")
      return device_error{"FAKE_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested",
                          false};
    if (kernel.behavior == "fault")
      fault_pending_ = true;
    const auto* in = *static_cast<const float* const*>(params[0]);
    auto* out = *static_cast<float* const*>(params[1]);
    const auto n = *static_cast<const std::int32_t*>(params[2]);
    bool done = kernel.behavior == "lazy"; // already holds what it would compute: skip the work
    for (std::int32_t i = 0; done && i < n; ++i)
      done = out[i] == static_cast<float>(in[i] * kernel.factor);
    if (done) {
      clock_ns_ += 1000;
      return std::nullopt;
    }
    for (std::int32_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(in[i] * kernel.factor);
    ++launches_;
    if (kernel.behavior == "wrong_late" && launches_ > 4 && n > 0)
      out[0] = -1.0f;
    if (kernel.behavior == "oob_write") // right inside n, one element past the end (red zone)
      out[n] = 1.0f;
    if (kernel.behavior == "oob_before")
      out[-1] = 1.0f;
    if (kernel.behavior == "write_input")
      const_cast<float*>(in)[0] += 1.0f;
    if (kernel.behavior == "nondeterministic" && n > 0)
      out[0] += static_cast<float>(launches_) * 1e-3f;
    clock_ns_ += kernel.duration_ns;
    return std::nullopt;
  }

  device_status synchronize() override {
    if (fault_pending_)
      return device_error{"FAKE_ERROR_ILLEGAL_ADDRESS", "an illegal memory access", true};
    return std::nullopt;
  }

  device_status create_event(event_handle& event) override {
    event = new std::int64_t(0);
    return std::nullopt;
  }

  void destroy_event(event_handle event) override { delete static_cast<std::int64_t*>(event); }

  device_status record_event(event_handle event) override {
    *static_cast<std::int64_t*>(event) = clock_ns_;
    return std::nullopt;
  }

  device_status wait_event(event_handle) override { return synchronize(); }

  device_status elapsed_ns(event_handle start, event_handle stop, std::int64_t& ns) override {
    ns = *static_cast<std::int64_t*>(stop) - *static_cast<std::int64_t*>(start);
    return std::nullopt;
  }

private:
  std::int64_t clock_ns_ = 0;
  std::int64_t launches_ = 0;
  bool fault_pending_ = false;
};

} // namespace rpl::workers::kernel_process::fake
