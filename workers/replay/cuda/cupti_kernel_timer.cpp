#include "workers/replay/cuda/cupti_kernel_timer.hpp"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <utility>

#include <cuda.h>
#include <cupti.h>

#include "workers/tracers/cupti/kernel_activity.hpp"

namespace rpl::workers::replay {

/// The CUPTI functions this timer calls, from the library dlopen gave. The declarations come from
/// cupti.h; nothing links against libcupti, so a host without it still runs the replay.
struct cupti_kernel_timer::library {
  void* handle = nullptr;
  std::string path;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiSubscribe_v2) subscribe_v2 = nullptr; ///< CUPTI 12.6 and later; names a holder
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  CUpti_SubscriberHandle subscriber = nullptr;

  std::string error(CUptiResult result, const char* call) const {
    const char* text = nullptr;
    if (result_string != nullptr) {
      result_string(result, &text);
    }
    return std::string(call) + " failed: " +
           (text != nullptr ? text : "CUPTI error " + std::to_string(static_cast<int>(result)));
  }
};

namespace {

namespace tracer = rpl::workers::cupti_tracer;

// What CUPTI's callbacks fill; they are plain functions, called on CUPTI's threads too.
std::mutex g_mutex;
cupti_kernel_timer::records g_records; // guarded by g_mutex
std::atomic<std::uint32_t> g_last_launch{0};
cupti_kernel_timer::library* g_cupti = nullptr; // set once, never freed

constexpr std::size_t buffer_bytes = 4u << 20;

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || data == nullptr) {
    return;
  }
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call->callbackSite == CUPTI_API_EXIT) {
    g_last_launch.store(call->correlationId, std::memory_order_relaxed);
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  void* memory = nullptr;
  if (posix_memalign(&memory, 4096, buffer_bytes) != 0) {
    memory = nullptr; // CUPTI then drops records and counts them
  }
  *buffer = static_cast<std::uint8_t*>(memory);
  *size = memory != nullptr ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(
    CUcontext context, std::uint32_t stream, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  cupti_kernel_timer::records got;
  if (g_cupti != nullptr && buffer != nullptr && valid > 0) {
    CUpti_Activity* record = nullptr;
    while (g_cupti->next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
      const tracer::kernel_activity* k = tracer::as_kernel_activity(*record);
      if (k == nullptr) {
        continue;
      }
      if (tracer::gpu_span_complete(k->start, k->end)) {
        got.spans.push_back({k->correlationId, k->start, k->end});
      } else {
        ++got.incomplete;
      }
    }
    std::size_t dropped = 0;
    if (g_cupti->dropped_records(context, stream, &dropped) == CUPTI_SUCCESS) {
      got.dropped = dropped;
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_records.spans.insert(g_records.spans.end(), got.spans.begin(), got.spans.end());
  g_records.incomplete += got.incomplete;
  g_records.dropped += got.dropped;
}

/// CUPTI of this toolkit's major version (the record layouts of cupti.h hold within it).
std::string library_name() {
  if (const char* named = std::getenv("RPL_CUPTI_LIBRARY"); named != nullptr && *named != 0) {
    return named;
  }
  return "libcupti.so." + std::to_string(CUDA_VERSION / 1000);
}

template <class F> bool resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  return out != nullptr;
}

} // namespace

std::unique_ptr<cupti_kernel_timer> cupti_kernel_timer::attach(std::string& why_not) {
  if (g_cupti != nullptr) {
    why_not = "CUPTI is attached already in this process";
    return nullptr;
  }
  // Our tracer and capture library, like Nsight, are CUPTI clients loaded through this variable;
  // a second client's activity callbacks would take the first one's buffers.
  if (const char* injected = std::getenv("CUDA_INJECTION64_PATH");
      injected != nullptr && *injected != 0) {
    why_not = std::string("another CUPTI client is loaded into this process "
                          "(CUDA_INJECTION64_PATH=") +
              injected + ")";
    return nullptr;
  }
  auto* lib = new library;
  lib->path = library_name();
  lib->handle = ::dlopen(lib->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) {
    const char* error = ::dlerror();
    why_not = "CUPTI could not be loaded (" + (error != nullptr ? std::string(error) : lib->path) +
              "; it is in the CUDA toolkit, e.g. /usr/local/cuda/lib64: put its folder on "
              "LD_LIBRARY_PATH, or name the library in RPL_CUPTI_LIBRARY)";
    delete lib;
    return nullptr;
  }
  const bool resolved =
      resolve(lib->handle, "cuptiSubscribe", lib->subscribe) &&
      resolve(lib->handle, "cuptiUnsubscribe", lib->unsubscribe) &&
      resolve(lib->handle, "cuptiEnableCallback", lib->enable_callback) &&
      resolve(lib->handle, "cuptiActivityRegisterCallbacks", lib->register_callbacks) &&
      resolve(lib->handle, "cuptiActivityEnable", lib->enable) &&
      resolve(lib->handle, "cuptiActivityDisable", lib->disable) &&
      resolve(lib->handle, "cuptiActivityFlushAll", lib->flush_all) &&
      resolve(lib->handle, "cuptiActivityGetNextRecord", lib->next_record) &&
      resolve(lib->handle, "cuptiActivityGetNumDroppedRecords", lib->dropped_records) &&
      resolve(lib->handle, "cuptiGetResultString", lib->result_string);
  if (!resolved) {
    const char* error = ::dlerror();
    why_not = lib->path + " lacks a CUPTI function this program calls (" +
              (error != nullptr ? error : "dlsym") + ")";
    ::dlclose(lib->handle);
    delete lib;
    return nullptr;
  }
  resolve(lib->handle, "cuptiSubscribe_v2", lib->subscribe_v2);
  // The launch callbacks give each launch's correlation id, which its kernel record repeats. Only
  // one subscriber may exist: this also finds a CUPTI client that CUDA_INJECTION64_PATH did not
  // bring (a debugger, compute-sanitizer).
  CUptiResult subscribed = CUPTI_SUCCESS;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {0};
  if (lib->subscribe_v2 != nullptr) {
    CUpti_SubscriberParams params = {};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "rpl-replay-cuda";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof holder - 1;
    subscribed = lib->subscribe_v2(&lib->subscriber, on_launch, nullptr, &params);
  } else {
    subscribed = lib->subscribe(&lib->subscriber, on_launch, nullptr);
  }
  if (subscribed != CUPTI_SUCCESS) {
    why_not = subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                  ? std::string("another CUPTI client holds this process") +
                        (holder[0] != 0 ? std::string(" (") + holder + ")" : std::string()) +
                        ", e.g. Nsight, compute-sanitizer or a debugger"
                  : lib->error(subscribed, "cuptiSubscribe");
    return nullptr; // the library stays loaded: CUPTI may have started threads
  }
  for (const CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz}) {
    const auto r = lib->enable_callback(1, lib->subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (r != CUPTI_SUCCESS) {
      why_not = lib->error(r, "cuptiEnableCallback(cuLaunchKernel)");
      lib->unsubscribe(lib->subscriber);
      return nullptr;
    }
  }
  const auto registered = lib->register_callbacks(buffer_requested, buffer_completed);
  if (registered != CUPTI_SUCCESS) {
    why_not = lib->error(registered, "cuptiActivityRegisterCallbacks");
    lib->unsubscribe(lib->subscriber);
    return nullptr;
  }
  g_cupti = lib;
  return std::unique_ptr<cupti_kernel_timer>(new cupti_kernel_timer(lib));
}

cupti_kernel_timer::~cupti_kernel_timer() {
  if (recording_) {
    cupti_->disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  cupti_->unsubscribe(cupti_->subscriber);
}

bool cupti_kernel_timer::start(std::string& why_not) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_records = {};
  }
  const auto r = cupti_->enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    why_not = cupti_->error(r, "cuptiActivityEnable(CONCURRENT_KERNEL)");
    return false;
  }
  recording_ = true;
  return true;
}

std::uint32_t cupti_kernel_timer::last_launch_id() const {
  return g_last_launch.load(std::memory_order_relaxed);
}

cupti_kernel_timer::records cupti_kernel_timer::finish() {
  cupti_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (recording_) {
    cupti_->disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    recording_ = false;
  }
  cupti_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mutex);
  return std::exchange(g_records, {});
}

} // namespace rpl::workers::replay
