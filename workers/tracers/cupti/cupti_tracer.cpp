// rpl_cupti_tracer: a CUPTI activity tracer loaded into any CUDA program through
// CUDA_INJECTION64_PATH. It records kernels, memory copies, memsets, synchronization and the
// launch/synchronize-type runtime and driver API calls, and writes ONE rocpd database per process
// at exit: ${RPL_TRACE_DIR:-./rocm-perf-trace}/<hostname>/<pid>_results.db (as rocprofv3 does), so
// the rest of rocm-perf reads NVIDIA traces with the same reader as AMD ones.
//
// Rules: never crash or stop the traced program. Every failure prints one line prefixed
// "rocm-perf tracer:" on stderr and tracing goes on with what still works.

#include <cuda.h>
#include <cupti.h>

#include <cxxabi.h>
#include <pthread.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/trace/rocpd_writer.hpp"

namespace {

namespace rocpd = rpl::stages::rocpd;
using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Diagnostics

void warn(const std::string& message) {
  std::fprintf(stderr, "rocm-perf tracer: %s\n", message.c_str());
}

bool cupti_ok(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) {
    return true;
  }
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    text = "unknown CUPTI error";
  }
  warn(std::string(what) + " failed: " + text + " (" + std::to_string(static_cast<int>(result)) +
       "); continuing without it");
  return false;
}

std::int64_t i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::string(fallback);
}

// ---------------------------------------------------------------------------------------------
// Records, copied out of CUPTI's buffers (CUPTI reuses the buffers, and the kernel name pointer is
// only guaranteed while the buffer is alive, so names are interned).

struct kernel_rec {
  std::uint64_t start = 0, end = 0, queued = 0, submitted = 0, completed = 0;
  std::uint64_t graph_node_id = 0, local_memory_total = 0;
  std::int64_t grid_id = 0;
  const std::string* name = nullptr;
  std::uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  std::int32_t grid[3] = {1, 1, 1};
  std::int32_t block[3] = {1, 1, 1};
  std::int32_t static_shared = 0, dynamic_shared = 0;
  std::uint32_t local_per_thread = 0, shared_executed = 0, graph_id = 0;
  std::uint32_t cluster[3] = {0, 0, 0};
  std::uint16_t registers = 0;
  std::uint8_t launch_type = 0, cache_requested = 0, cache_executed = 0;
  bool device_launched = false;
};

struct copy_rec {
  std::uint64_t start = 0, end = 0, bytes = 0;
  std::uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  std::uint32_t src_device = 0, dst_device = 0;
  std::uint8_t kind = 0, src_kind = 0, dst_kind = 0;
  bool peer = false;
  bool async = false;
};

struct memset_rec {
  std::uint64_t start = 0, end = 0, bytes = 0;
  std::uint32_t device = 0, context = 0, stream = 0, correlation = 0, value = 0;
  std::uint16_t memory_kind = 0;
};

struct sync_rec {
  std::uint64_t start = 0, end = 0, event_sync_id = 0;
  std::uint32_t type = 0, correlation = 0, context = 0, stream = 0, event = 0, return_value = 0;
};

struct api_rec {
  std::uint64_t start = 0, end = 0;
  std::uint32_t cbid = 0, pid = 0, tid = 0, correlation = 0, return_value = 0;
  bool driver = false;
};

struct device_rec {
  std::string name;
  std::uint64_t memory_bytes = 0, memory_bandwidth = 0;
  std::uint32_t id = 0, cc_major = 0, cc_minor = 0, sm_count = 0, clock_khz = 0, warp_size = 0;
  std::uint32_t l2_bytes = 0, max_warps_per_sm = 0, max_blocks_per_sm = 0, shared_per_sm = 0;
  std::uint32_t registers_per_sm = 0, shared_per_block = 0, max_threads_per_block = 0;
  std::uint32_t memcpy_engines = 0;
  bool mig = false;
};

struct state {
  std::mutex mutex; // guards everything below that the buffer callbacks touch
  std::vector<kernel_rec> kernels;
  std::vector<copy_rec> copies;
  std::vector<memset_rec> memsets;
  std::vector<sync_rec> syncs;
  std::vector<api_rec> apis;
  std::map<std::uint32_t, device_rec> devices;            // CUPTI device records, by ordinal
  std::map<std::uint32_t, std::uint32_t> context_device;  // contextId -> device ordinal
  std::unordered_set<std::string> names;                  // node-based: stable pointers
  std::uint64_t dropped = 0;         // cuptiActivityGetNumDroppedRecords, summed
  std::uint64_t runtime_records = 0; // every runtime API record, kept or not
  std::uint64_t driver_records = 0;
  std::uint64_t incomplete = 0;      // records without a valid start/end (forced flush)
  std::uint64_t other_records = 0;
  std::uint64_t buffers_completed = 0;
  std::uint64_t buffer_alloc_failures = 0;
  bool finished = false; // the database was written: later buffers are only freed

  // Set once in InitializeInjection, read-only afterwards.
  pid_t pid = 0;
  std::uint64_t start_ns = 0;
  std::filesystem::path out_dir;
  std::size_t buffer_bytes = 8u << 20;
  bool verbose = false;
  std::vector<std::string> runtime_names; // by cbid, canonical ("cudaLaunchKernel")
  std::vector<std::string> runtime_raw;   // by cbid, as CUPTI names it ("cudaLaunchKernel_v7000")
  std::vector<char> runtime_keep;
  std::vector<std::string> driver_names;
  std::vector<char> driver_keep;
};

// Leaked on purpose: CUPTI may call back during static destruction and after our exit handler.
state* g_state = nullptr;

// "cudaLaunchKernel_ptsz_v7000" -> "cudaLaunchKernel"; "__cudaLaunchKernel_v13000" ->
// "cudaLaunchKernel" (CUDA 13 routes <<<>>> through __cudaLaunchKernel).
std::string canonical_api_name(std::string name) {
  if (const auto v = name.rfind("_v"); v != std::string::npos && v + 2 < name.size() &&
                                        std::all_of(name.begin() + static_cast<long>(v) + 2,
                                                    name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    name.erase(v);
  }
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    const std::size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) {
      name.erase(name.size() - n);
    }
  }
  while (!name.empty() && name.front() == '_') {
    name.erase(0, 1);
  }
  return name;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Which runtime calls become rocpd regions: launches, copies/sets and the synchronizing calls.
bool keep_runtime(const std::string& n) {
  return starts_with(n, "cudaLaunch") || starts_with(n, "cudaGraphLaunch") ||
         starts_with(n, "cudaMemcpy") || starts_with(n, "cudaMemset") ||
         n == "cudaStreamSynchronize" || n == "cudaDeviceSynchronize" ||
         n == "cudaEventSynchronize" || n == "cudaStreamWaitEvent" ||
         starts_with(n, "cudaEventRecord") || n == "cudaThreadSynchronize";
}

bool keep_driver(const std::string& n) {
  return starts_with(n, "cuLaunchKernel") || starts_with(n, "cuLaunchCooperativeKernel") ||
         starts_with(n, "cuGraphLaunch") || starts_with(n, "cuMemcpy") ||
         starts_with(n, "cuMemset") || n == "cuStreamSynchronize" || n == "cuCtxSynchronize" ||
         n == "cuEventSynchronize" || n == "cuStreamWaitEvent" || starts_with(n, "cuEventRecord");
}

void fill_api_names(CUpti_CallbackDomain domain, std::uint32_t count,
                    std::vector<std::string>& canonical, std::vector<std::string>* raw,
                    std::vector<char>& keep, bool (*keep_fn)(const std::string&)) {
  canonical.assign(count, std::string());
  if (raw != nullptr) {
    raw->assign(count, std::string());
  }
  keep.assign(count, 0);
  for (std::uint32_t cbid = 1; cbid < count; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
      continue; // gaps in the id space are normal
    }
    canonical[cbid] = canonical_api_name(name);
    if (raw != nullptr) {
      (*raw)[cbid] = name;
    }
    keep[cbid] = keep_fn(canonical[cbid]) ? 1 : 0;
  }
}

// ---------------------------------------------------------------------------------------------
// CUPTI buffer callbacks

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  void* memory = nullptr;
  const std::size_t bytes = g_state != nullptr ? g_state->buffer_bytes : (8u << 20);
  // CUPTI wants 8-byte alignment; a page keeps the buffers tidy.
  if (posix_memalign(&memory, 4096, bytes) != 0) {
    memory = nullptr;
  }
  *buffer = static_cast<uint8_t*>(memory);
  *size = memory != nullptr ? bytes : 0;
  if (memory == nullptr && g_state != nullptr) {
    std::lock_guard<std::mutex> lock(g_state->mutex);
    if (g_state->buffer_alloc_failures++ == 0) {
      warn("could not allocate a " + std::to_string(bytes) +
           "-byte activity buffer; CUPTI drops records until memory is available");
    }
  }
}

struct parsed {
  std::vector<kernel_rec> kernels;
  std::vector<copy_rec> copies;
  std::vector<memset_rec> memsets;
  std::vector<sync_rec> syncs;
  std::vector<api_rec> apis;
  std::vector<device_rec> devices;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> contexts;
  std::vector<std::pair<std::size_t, std::string>> kernel_names; // index into kernels, name
  std::uint64_t runtime_records = 0, driver_records = 0, incomplete = 0, other = 0;
};

void parse_record(const CUpti_Activity* record, parsed& out) {
  switch (record->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    if (k->start == 0 || k->end < k->start) {
      ++out.incomplete;
      return;
    }
    kernel_rec r;
    r.start = k->start;
    r.end = k->end;
    r.queued = k->queued;
    r.submitted = k->submitted;
    r.completed = k->completed;
    r.graph_node_id = k->graphNodeId;
    r.local_memory_total = k->localMemoryTotal_v2 != 0 ? k->localMemoryTotal_v2 : k->localMemoryTotal;
    r.grid_id = k->gridId;
    r.device = k->deviceId;
    r.context = k->contextId;
    r.stream = k->streamId;
    r.correlation = k->correlationId;
    r.grid[0] = k->gridX;
    r.grid[1] = k->gridY;
    r.grid[2] = k->gridZ;
    r.block[0] = k->blockX;
    r.block[1] = k->blockY;
    r.block[2] = k->blockZ;
    r.static_shared = k->staticSharedMemory;
    r.dynamic_shared = k->dynamicSharedMemory;
    r.local_per_thread = k->localMemoryPerThread;
    r.shared_executed = k->sharedMemoryExecuted;
    r.graph_id = k->graphId;
    r.cluster[0] = k->clusterX;
    r.cluster[1] = k->clusterY;
    r.cluster[2] = k->clusterZ;
    r.registers = k->registersPerThread;
    r.launch_type = k->launchType;
    r.cache_requested = k->cacheConfig.config.requested;
    r.cache_executed = k->cacheConfig.config.executed;
    r.device_launched = k->isDeviceLaunched != 0;
    out.kernel_names.emplace_back(out.kernels.size(), k->name != nullptr ? k->name : "<unknown kernel>");
    out.kernels.push_back(r);
    out.contexts.emplace_back(k->contextId, k->deviceId);
    return;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
    if (m->start == 0 || m->end < m->start) {
      ++out.incomplete;
      return;
    }
    copy_rec r;
    r.start = m->start;
    r.end = m->end;
    r.bytes = m->bytes;
    r.device = m->deviceId;
    r.context = m->contextId;
    r.stream = m->streamId;
    r.correlation = m->correlationId;
    r.src_device = r.dst_device = m->deviceId;
    r.kind = m->copyKind;
    r.src_kind = m->srcKind;
    r.dst_kind = m->dstKind;
    r.async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
    out.copies.push_back(r);
    out.contexts.emplace_back(m->contextId, m->deviceId);
    return;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY2: {
    const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
    if (m->start == 0 || m->end < m->start) {
      ++out.incomplete;
      return;
    }
    copy_rec r;
    r.start = m->start;
    r.end = m->end;
    r.bytes = m->bytes;
    r.device = m->deviceId;
    r.context = m->contextId;
    r.stream = m->streamId;
    r.correlation = m->correlationId;
    r.src_device = m->srcDeviceId;
    r.dst_device = m->dstDeviceId;
    r.kind = m->copyKind;
    r.src_kind = m->srcKind;
    r.dst_kind = m->dstKind;
    r.peer = true;
    r.async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
    out.copies.push_back(r);
    out.contexts.emplace_back(m->contextId, m->deviceId);
    return;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
    if (m->start == 0 || m->end < m->start) {
      ++out.incomplete;
      return;
    }
    memset_rec r;
    r.start = m->start;
    r.end = m->end;
    r.bytes = m->bytes;
    r.device = m->deviceId;
    r.context = m->contextId;
    r.stream = m->streamId;
    r.correlation = m->correlationId;
    r.value = m->value;
    r.memory_kind = m->memoryKind;
    out.memsets.push_back(r);
    out.contexts.emplace_back(m->contextId, m->deviceId);
    return;
  }
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
    const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
    if (s->end < s->start) {
      ++out.incomplete;
      return;
    }
    sync_rec r;
    r.start = s->start;
    r.end = s->end;
    r.event_sync_id = s->cudaEventSyncId;
    r.type = static_cast<std::uint32_t>(s->type);
    r.correlation = s->correlationId;
    r.context = s->contextId;
    r.stream = s->streamId;
    r.event = s->cudaEventId;
    r.return_value = s->returnValue;
    out.syncs.push_back(r);
    return;
  }
  case CUPTI_ACTIVITY_KIND_RUNTIME:
  case CUPTI_ACTIVITY_KIND_DRIVER: {
    const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
    const bool driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
    (driver ? out.driver_records : out.runtime_records) += 1;
    const std::vector<char>& keep = driver ? g_state->driver_keep : g_state->runtime_keep;
    if (a->cbid >= keep.size() || keep[a->cbid] == 0) {
      return;
    }
    if (a->end < a->start) {
      ++out.incomplete;
      return;
    }
    api_rec r;
    r.start = a->start;
    r.end = a->end;
    r.cbid = a->cbid;
    r.pid = a->processId;
    r.tid = a->threadId;
    r.correlation = a->correlationId;
    r.return_value = a->returnValue;
    r.driver = driver;
    out.apis.push_back(r);
    return;
  }
  case CUPTI_ACTIVITY_KIND_DEVICE: {
    const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
    device_rec r;
    r.name = d->name != nullptr ? d->name : "";
    r.memory_bytes = d->globalMemorySize;
    r.memory_bandwidth = d->globalMemoryBandwidth;
    r.id = d->id;
    r.cc_major = d->computeCapabilityMajor;
    r.cc_minor = d->computeCapabilityMinor;
    r.sm_count = d->numMultiprocessors;
    r.clock_khz = d->coreClockRate;
    r.warp_size = d->numThreadsPerWarp;
    r.l2_bytes = d->l2CacheSize;
    r.max_warps_per_sm = d->maxWarpsPerMultiprocessor;
    r.max_blocks_per_sm = d->maxBlocksPerMultiprocessor;
    r.shared_per_sm = d->maxSharedMemoryPerMultiprocessor;
    r.registers_per_sm = d->maxRegistersPerMultiprocessor;
    r.shared_per_block = d->maxSharedMemoryPerBlock;
    r.max_threads_per_block = d->maxThreadsPerBlock;
    r.memcpy_engines = d->numMemcpyEngines;
    r.mig = d->isMigEnabled != 0;
    out.devices.push_back(std::move(r));
    return;
  }
  case CUPTI_ACTIVITY_KIND_CONTEXT: {
    const auto* c = reinterpret_cast<const CUpti_ActivityContext3*>(record);
    out.contexts.emplace_back(c->contextId, c->deviceId);
    return;
  }
  default:
    ++out.other;
    return;
  }
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                               size_t valid_size) {
  (void)size;
  try {
    parsed out;
    if (g_state != nullptr && buffer != nullptr && valid_size > 0) {
      CUpti_Activity* record = nullptr;
      for (;;) {
        const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_size, &record);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) {
          break;
        }
        if (r != CUPTI_SUCCESS) {
          cupti_ok(r, "cuptiActivityGetNextRecord");
          break;
        }
        parse_record(record, out);
      }
    }
    std::size_t dropped = 0;
    const CUptiResult dr = cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped);
    if (g_state != nullptr) {
      std::lock_guard<std::mutex> lock(g_state->mutex);
      state& s = *g_state;
      ++s.buffers_completed;
      if (dr == CUPTI_SUCCESS) {
        s.dropped += dropped;
      }
      if (!s.finished) {
        for (auto& [index, name] : out.kernel_names) {
          out.kernels[index].name = &*s.names.insert(std::move(name)).first;
        }
        s.kernels.insert(s.kernels.end(), out.kernels.begin(), out.kernels.end());
        s.copies.insert(s.copies.end(), out.copies.begin(), out.copies.end());
        s.memsets.insert(s.memsets.end(), out.memsets.begin(), out.memsets.end());
        s.syncs.insert(s.syncs.end(), out.syncs.begin(), out.syncs.end());
        s.apis.insert(s.apis.end(), out.apis.begin(), out.apis.end());
        for (device_rec& d : out.devices) {
          s.devices[d.id] = std::move(d);
        }
        for (const auto& [ctx, dev] : out.contexts) {
          s.context_device.emplace(ctx, dev);
        }
        s.runtime_records += out.runtime_records;
        s.driver_records += out.driver_records;
        s.incomplete += out.incomplete;
        s.other_records += out.other;
      }
    }
  } catch (const std::exception& e) {
    warn(std::string("dropped an activity buffer: ") + e.what());
  } catch (...) {
    warn("dropped an activity buffer: unknown error");
  }
  std::free(buffer);
}

// ---------------------------------------------------------------------------------------------
// Host and device descriptions

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!all.empty() && all.back() == '\0') {
    all.pop_back();
  }
  std::replace(all.begin(), all.end(), '\0', ' ');
  return all;
}

json environment_json() {
  json env = json::object();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) {
      continue;
    }
    const std::string_view value = entry.substr(eq + 1);
    if (value.find(';') != std::string_view::npos) {
      continue; // rocprofv3 drops these too
    }
    // Invalid UTF-8 would make nlohmann throw on dump: keep ASCII-printable values only.
    if (!std::all_of(value.begin(), value.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f; })) {
      continue;
    }
    env[std::string(entry.substr(0, eq))] = std::string(value);
  }
  return env;
}

std::string demangle(const std::string& name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) {
    std::free(text);
    return name;
  }
  std::string out(text);
  std::free(text);
  return out;
}

std::string json_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
  return out;
}

/// Device description from the driver API (works after the runtime's teardown: the driver stays
/// loaded until the process ends), merged with CUPTI's device record where the driver says nothing.
json describe_device(std::uint32_t ordinal, const device_rec* cupti_device, std::string& product,
                     int& cc_major, int& cc_minor, std::int64_t& pci_device_id) {
  json ext = json::object();
  ext["vendor"] = "NVIDIA";
  ext["device_ordinal"] = ordinal;
  CUdevice dev = 0;
  CUresult r = cuDeviceGet(&dev, static_cast<int>(ordinal));
  if (r == CUDA_ERROR_NOT_INITIALIZED && cuInit(0) == CUDA_SUCCESS) {
    r = cuDeviceGet(&dev, static_cast<int>(ordinal));
  }
  const bool driver_ok = r == CUDA_SUCCESS;
  auto attr = [&](CUdevice_attribute a) -> std::optional<int> {
    int v = 0;
    if (!driver_ok || cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS) {
      return std::nullopt;
    }
    return v;
  };
  auto put = [&](const char* key, std::optional<int> v, std::int64_t fallback, std::int64_t scale = 1) {
    if (v) {
      ext[key] = static_cast<std::int64_t>(*v) * scale;
    } else if (fallback != 0) {
      ext[key] = fallback;
    }
  };
  const device_rec empty;
  const device_rec& c = cupti_device != nullptr ? *cupti_device : empty;

  char name[256] = {0};
  if (driver_ok && cuDeviceGetName(name, sizeof name - 1, dev) == CUDA_SUCCESS) {
    product = json_safe(name);
  } else {
    product = json_safe(c.name);
  }
  const auto major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const auto minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  cc_major = major ? *major : static_cast<int>(c.cc_major);
  cc_minor = minor ? *minor : static_cast<int>(c.cc_minor);
  ext["compute_capability"] = std::to_string(cc_major) + "." + std::to_string(cc_minor);

  put("sm_count", attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), c.sm_count);
  put("clock_khz", attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE), c.clock_khz);
  put("memory_clock_khz", attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE), 0);
  put("memory_bus_width", attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH), 0);
  put("warp_size", attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE), c.warp_size);
  put("max_threads_per_sm", attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
      static_cast<std::int64_t>(c.max_warps_per_sm) * c.warp_size);
  put("max_blocks_per_sm", attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR), c.max_blocks_per_sm);
  put("max_threads_per_block", attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), c.max_threads_per_block);
  put("shared_memory_per_sm", attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR), c.shared_per_sm);
  put("shared_memory_per_block_optin", attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), 0);
  put("shared_memory_per_block", attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK), c.shared_per_block);
  put("registers_per_sm", attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR), c.registers_per_sm);
  put("l2_cache_bytes", attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), c.l2_bytes);
  put("async_engine_count", attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT), c.memcpy_engines);
  put("pci_bus_id", attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID), 0);
  put("pci_device_id", attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID), 0);
  put("pci_domain_id", attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID), 0);
  const auto gpu_pci = attr(CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID);
  if (gpu_pci) {
    // The combined 16-bit PCI device id (high half) and vendor id (low half).
    const auto raw = static_cast<std::uint32_t>(*gpu_pci);
    ext["gpu_pci_device_id"] = raw;
    pci_device_id = static_cast<std::int64_t>(raw >> 16);
  }
  std::size_t total = 0;
  if (driver_ok && cuDeviceTotalMem(&total, dev) == CUDA_SUCCESS) {
    ext["memory_bytes"] = static_cast<std::uint64_t>(total);
  } else if (c.memory_bytes != 0) {
    ext["memory_bytes"] = c.memory_bytes;
  }
  if (c.memory_bandwidth != 0) {
    ext["memory_bandwidth_kbps"] = c.memory_bandwidth; // CUPTI: KB/s
  }
  if (cupti_device != nullptr) {
    ext["mig_enabled"] = c.mig;
  }
  CUuuid uuid{};
  if (driver_ok && cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
    char text[64];
    const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
    std::snprintf(text, sizeof text,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    ext["uuid"] = text;
  }
  if (!driver_ok && cupti_device == nullptr) {
    ext["unavailable"] = "neither the driver nor CUPTI described this device";
  }
  // rocprofiler-style aliases, so generic readers find the usual keys.
  if (ext.contains("sm_count")) {
    ext["cu_count"] = ext["sm_count"];
  }
  if (ext.contains("warp_size")) {
    ext["wave_front_size"] = ext["warp_size"];
  }
  if (ext.contains("clock_khz")) {
    ext["max_engine_clk_fcompute"] = ext["clock_khz"].get<std::int64_t>() / 1000; // MHz
  }
  return ext;
}

std::string copy_name(std::uint8_t kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
    return "MEMORY_COPY_HOST_TO_DEVICE";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
    return "MEMORY_COPY_DEVICE_TO_HOST";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
    return "MEMORY_COPY_DEVICE_TO_DEVICE";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
    return "MEMORY_COPY_HOST_TO_HOST";
  default:
    return "MEMORY_COPY_UNKNOWN";
  }
}

const char* memory_kind_name(unsigned kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "PAGEABLE";
  case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "PINNED";
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "DEVICE";
  case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "ARRAY";
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "MANAGED";
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "DEVICE_STATIC";
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "MANAGED_STATIC";
  default: return "UNKNOWN";
  }
}

bool host_side(unsigned memory_kind) {
  return memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
         memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
}

const char* sync_name(std::uint32_t type) {
  switch (type) {
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "cudaEventSynchronize";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "cudaStreamWaitEvent";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "cudaStreamSynchronize";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "cudaDeviceSynchronize";
  default: return nullptr;
  }
}

// ---------------------------------------------------------------------------------------------
// Writing the database

struct snapshot {
  std::vector<kernel_rec> kernels;
  std::vector<copy_rec> copies;
  std::vector<memset_rec> memsets;
  std::vector<sync_rec> syncs;
  std::vector<api_rec> apis;
  std::map<std::uint32_t, device_rec> devices;
  std::map<std::uint32_t, std::uint32_t> context_device;
  std::uint64_t dropped = 0, runtime_records = 0, driver_records = 0, incomplete = 0, other = 0;
  std::uint64_t buffers = 0, alloc_failures = 0;
};

std::filesystem::path write_database(const snapshot& s, std::uint64_t end_ns) {
  const state& g = *g_state;
  const auto pid = static_cast<std::int64_t>(g.pid);

  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "localhost");
  }
  const std::filesystem::path dir = g.out_dir / host;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  }
  const std::filesystem::path path = dir / (std::to_string(pid) + "_results.db");
  rocpd::writer w(path);

  // Node.
  rocpd::node_info node;
  node.machine_id = read_first_line("/etc/machine-id");
  if (node.machine_id.empty()) {
    node.machine_id = std::string(host);
  }
  node.hostname = host;
  utsname u{};
  if (uname(&u) == 0) {
    node.system_name = u.sysname;
    node.release = u.release;
    node.version = u.version;
    node.hardware_name = u.machine;
  }
  w.add_node(node);

  // Threads: the main thread plus every thread that made a kept API call.
  std::unordered_map<std::uint32_t, std::uint32_t> corr_tid; // correlation -> tid
  std::map<std::int64_t, std::pair<std::uint64_t, std::uint64_t>> threads;
  threads[pid] = {g.start_ns, end_ns};
  for (const api_rec& a : s.apis) {
    corr_tid.emplace(a.correlation, a.tid);
    auto [it, inserted] = threads.emplace(static_cast<std::int64_t>(a.tid), std::make_pair(a.start, a.end));
    if (!inserted) {
      it->second.first = std::min(it->second.first, a.start);
      it->second.second = std::max(it->second.second, a.end);
    }
  }
  auto tid_of = [&](std::uint32_t correlation) -> std::int64_t {
    const auto it = corr_tid.find(correlation);
    return it != corr_tid.end() ? static_cast<std::int64_t>(it->second) : pid;
  };

  // Devices used: from every record that names one.
  std::set<std::uint32_t> used;
  for (const kernel_rec& k : s.kernels) used.insert(k.device);
  for (const copy_rec& c : s.copies) {
    used.insert(c.device);
    if (c.peer) {
      used.insert(c.src_device);
      used.insert(c.dst_device);
    }
  }
  for (const memset_rec& m : s.memsets) used.insert(m.device);
  for (const auto& [ctx, dev] : s.context_device) used.insert(dev);
  auto device_of_context = [&](std::uint32_t ctx) -> std::int64_t {
    const auto it = s.context_device.find(ctx);
    return it != s.context_device.end() ? static_cast<std::int64_t>(it->second) : -1;
  };

  // Process.
  rocpd::process_info process;
  process.pid = pid;
  process.ppid = static_cast<std::int64_t>(getppid());
  process.init_ns = process.start_ns = i64(g.start_ns);
  process.fini_ns = process.end_ns = i64(end_ns);
  process.command = json_safe(command_line());
  process.environment = environment_json();
  int cupti_version = 0;
  std::uint32_t cupti_runtime_version = 0;
  if (cuptiGetVersion(&cupti_runtime_version) == CUPTI_SUCCESS) {
    cupti_version = static_cast<int>(cupti_runtime_version);
  }
  int driver_version = 0;
  (void)cuDriverGetVersion(&driver_version);
  process.extdata = {{"tracer", "rpl_cupti_tracer"},
                     {"dropped_records", s.dropped},
                     {"incomplete_records", s.incomplete},
                     {"runtime_api_records", s.runtime_records},
                     {"driver_api_records", s.driver_records},
                     {"other_records", s.other},
                     {"activity_buffers", s.buffers},
                     {"buffer_allocation_failures", s.alloc_failures},
                     {"cupti_api_version", cupti_version},
                     {"cupti_header_version", CUPTI_API_VERSION},
                     {"cuda_driver_version", driver_version},
                     {"timestamps", "CUPTI (cuptiGetTimestamp clock), ns"},
                     {"agent_vgpr_meaning", "NVIDIA: arch_vgpr_count = registers per thread"}};
  w.add_process(process);

  for (const auto& [tid, span] : threads) {
    rocpd::thread_info t;
    t.tid = tid;
    t.pid = pid;
    t.ppid = process.ppid;
    t.start_ns = i64(span.first);
    t.end_ns = i64(span.second);
    t.name = json_safe(read_first_line(("/proc/self/task/" + std::to_string(tid) + "/comm").c_str()));
    w.add_thread(t);
  }

  // Agents: one GPU agent per device used (id = device ordinal), and one CPU agent for the host
  // side of copies (id = one past the largest ordinal).
  std::uint32_t host_agent = 0;
  for (const std::uint32_t d : used) host_agent = std::max(host_agent, d + 1);
  for (const std::uint32_t d : used) {
    const auto it = s.devices.find(d);
    std::string product;
    int major = 0, minor = 0;
    std::int64_t pci = 0;
    json ext = describe_device(d, it != s.devices.end() ? &it->second : nullptr, product, major, minor, pci);
    rocpd::agent_info agent;
    agent.id = d;
    agent.type = "GPU";
    agent.absolute_index = d;
    agent.logical_index = d;
    agent.type_index = d;
    agent.uuid = pci;
    agent.name = "sm_" + std::to_string(major) + std::to_string(minor);
    std::string model = product;
    if (starts_with(model, "NVIDIA ")) model.erase(0, 7);
    if (const auto sp = model.find(' '); sp != std::string::npos) model.erase(sp);
    agent.model_name = model;
    agent.vendor_name = "NVIDIA";
    agent.product_name = product;
    agent.extdata = std::move(ext);
    w.add_agent(agent);
  }
  bool any_host_copy = false;
  for (const copy_rec& c : s.copies) {
    any_host_copy = any_host_copy || host_side(c.src_kind) || host_side(c.dst_kind) ||
                    c.kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
  }
  if (any_host_copy) {
    rocpd::agent_info cpu;
    cpu.id = host_agent;
    cpu.type = "CPU";
    cpu.absolute_index = host_agent;
    cpu.logical_index = host_agent;
    cpu.type_index = 0;
    cpu.name = "host";
    cpu.vendor_name = "CPU";
    cpu.product_name = "host";
    cpu.extdata = {{"role", "host side of CUDA memory copies"}};
    w.add_agent(cpu);
  }

  // Queues: one per device ("Device <n>", id n + 1; 0 is rocprofv3's "Default Queue").
  for (const std::uint32_t d : used) {
    w.add_queue(pid, "Device " + std::to_string(d), static_cast<std::int64_t>(d) + 1);
  }
  auto queue_of = [&](std::int64_t device) { return device >= 0 ? device + 1 : 0; };

  // Streams: one per CUDA stream id ("Stream <id>"); an id seen in two contexts gets a fresh id.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::int64_t> stream_ids; // (ctx, stream)
  std::set<std::int64_t> taken{0};
  std::int64_t next_fresh = 1ll << 40;
  auto stream_of = [&](std::uint32_t ctx, std::uint32_t stream) -> std::int64_t {
    const auto key = std::make_pair(ctx, stream);
    if (const auto it = stream_ids.find(key); it != stream_ids.end()) {
      return it->second;
    }
    std::int64_t id = stream;
    if (taken.count(id) != 0) {
      id = next_fresh++;
    }
    taken.insert(id);
    stream_ids.emplace(key, id);
    w.add_stream(pid, "Stream " + std::to_string(stream), id);
    return id;
  };

  // Code objects: one per device (CUPTI does not trace module loads here); kernel symbols hang off
  // them.
  for (const std::uint32_t d : used) {
    rocpd::code_object_info co;
    co.id = static_cast<std::int64_t>(d) + 1;
    co.pid = pid;
    co.agent_id = d;
    co.uri = "cuda://device/" + std::to_string(d);
    co.storage_type = "MEMORY";
    co.extdata = {{"note", "placeholder: the CUDA modules loaded on this device"}};
    w.add_code_object(co);
  }

  // Kernel symbols: one per distinct (device, name).
  std::map<std::pair<std::uint32_t, const std::string*>, std::int64_t> symbol_ids;
  std::int64_t next_symbol = 1;
  for (const kernel_rec& k : s.kernels) {
    const auto key = std::make_pair(k.device, k.name);
    if (symbol_ids.count(key) != 0) {
      continue;
    }
    rocpd::kernel_symbol_info sym;
    sym.id = next_symbol++;
    sym.pid = pid;
    sym.code_object_id = static_cast<std::int64_t>(k.device) + 1;
    sym.kernel_name = json_safe(*k.name);
    sym.display_name = json_safe(demangle(*k.name));
    sym.kernarg_segment_alignment = 8;
    sym.group_segment_size = k.static_shared;     // static shared memory per block
    sym.private_segment_size = k.local_per_thread; // local memory per thread
    sym.sgpr_count = 0;
    // For NVIDIA agents arch_vgpr_count means registers per thread: this is what our occupancy
    // analysis reads (there are no scalar or accumulation registers on NVIDIA).
    sym.arch_vgpr_count = k.registers;
    sym.accum_vgpr_count = 0;
    sym.extdata = {{"registers_per_thread", k.registers},
                   {"static_shared_memory", k.static_shared},
                   {"local_memory_per_thread", k.local_per_thread},
                   {"device", k.device},
                   {"vendor", "NVIDIA"}};
    w.add_kernel_symbol(sym);
    symbol_ids.emplace(key, sym.id);
  }

  // Regions: API calls keep id = correlation id (as rocprofv3); other regions get fresh ids.
  std::set<std::int64_t> region_ids;
  std::int64_t max_corr = 0;
  for (const api_rec& a : s.apis) max_corr = std::max<std::int64_t>(max_corr, a.correlation);
  for (const sync_rec& r : s.syncs) max_corr = std::max<std::int64_t>(max_corr, r.correlation);
  for (const memset_rec& m : s.memsets) max_corr = std::max<std::int64_t>(max_corr, m.correlation);
  std::int64_t next_region = max_corr + 1;
  auto region_id = [&](std::int64_t wanted) {
    if (wanted > 0 && region_ids.insert(wanted).second) {
      return wanted;
    }
    while (!region_ids.insert(next_region).second) ++next_region;
    return next_region++;
  };
  std::unordered_map<std::uint32_t, std::string> corr_api; // correlation -> API name
  // Runtime first, so that a driver call sharing a runtime call's correlation id (an internal
  // call) is dropped rather than duplicated.
  std::vector<const api_rec*> apis;
  apis.reserve(s.apis.size());
  for (const api_rec& a : s.apis) apis.push_back(&a);
  std::stable_sort(apis.begin(), apis.end(), [](const api_rec* a, const api_rec* b) {
    return a->driver != b->driver ? !a->driver : a->start < b->start;
  });
  std::set<std::uint32_t> runtime_corr;
  for (const api_rec* a : apis) {
    if (a->driver && runtime_corr.count(a->correlation) != 0) {
      continue;
    }
    if (!a->driver) runtime_corr.insert(a->correlation);
    const std::vector<std::string>& names = a->driver ? g.driver_names : g.runtime_names;
    const std::string name = a->cbid < names.size() && !names[a->cbid].empty()
                                 ? names[a->cbid]
                                 : "cbid_" + std::to_string(a->cbid);
    corr_api.emplace(a->correlation, name);
    rocpd::region_info r;
    r.id = region_id(a->correlation);
    r.pid = pid;
    r.tid = a->tid;
    r.start_ns = i64(a->start);
    r.end_ns = i64(a->end);
    r.name = name;
    r.category = a->driver ? "CUDA_DRIVER_API" : "CUDA_RUNTIME_API";
    r.correlation_id = a->correlation;
    json ext = {{"cbid", a->cbid}, {"return_value", a->return_value}};
    if (!a->driver && a->cbid < g.runtime_raw.size() && g.runtime_raw[a->cbid] != name) {
      ext["api"] = g.runtime_raw[a->cbid];
    }
    r.event_extdata = ext.dump();
    w.add_region(r);
  }

  // Dispatches, in GPU start order (dispatch ids 1..N).
  std::vector<const kernel_rec*> kernels;
  kernels.reserve(s.kernels.size());
  for (const kernel_rec& k : s.kernels) kernels.push_back(&k);
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const kernel_rec* a, const kernel_rec* b) { return a->start < b->start; });
  std::int64_t dispatch_id = 0;
  for (const kernel_rec* k : kernels) {
    rocpd::dispatch_info d;
    d.dispatch_id = ++dispatch_id;
    d.pid = pid;
    d.tid = tid_of(k->correlation);
    d.agent_id = k->device;
    d.kernel_id = symbol_ids.at(std::make_pair(k->device, k->name));
    d.queue_id = queue_of(k->device);
    d.stream_id = stream_of(k->context, k->stream);
    d.start_ns = i64(k->start);
    d.end_ns = i64(k->end);
    d.private_segment_size = k->local_per_thread;
    d.group_segment_size = static_cast<std::int64_t>(k->static_shared) + k->dynamic_shared;
    for (int i = 0; i < 3; ++i) {
      d.workgroup[static_cast<std::size_t>(i)] = k->block[i];
      // rocpd grid sizes are in work-items (AQL semantics): blocks x threads per block.
      d.grid[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(k->grid[i]) * k->block[i];
    }
    d.correlation_id = k->correlation;
    json ext = {{"grid_blocks", {k->grid[0], k->grid[1], k->grid[2]}},
                {"device", k->device},
                {"context", k->context},
                {"cuda_stream", k->stream},
                {"registers_per_thread", k->registers},
                {"static_shared_memory", k->static_shared},
                {"dynamic_shared_memory", k->dynamic_shared},
                {"shared_memory_executed", k->shared_executed},
                {"local_memory_per_thread", k->local_per_thread},
                {"local_memory_total", k->local_memory_total},
                {"launch_type", k->launch_type},
                {"cache_config_requested", k->cache_requested},
                {"cache_config_executed", k->cache_executed},
                {"grid_id", k->grid_id}};
    if (k->cluster[0] != 0) ext["cluster"] = {k->cluster[0], k->cluster[1], k->cluster[2]};
    if (k->graph_id != 0) {
      ext["graph_id"] = k->graph_id;
      ext["graph_node_id"] = k->graph_node_id;
    }
    if (k->device_launched) ext["device_launched"] = true;
    if (k->queued != 0 && k->queued != ~0ull) ext["queued_ns"] = k->queued;
    if (k->submitted != 0 && k->submitted != ~0ull) ext["submitted_ns"] = k->submitted;
    if (const auto it = corr_api.find(k->correlation); it != corr_api.end()) ext["api"] = it->second;
    d.extdata = ext.dump();
    w.add_dispatch(d);
  }

  // Memory copies.
  for (const copy_rec& c : s.copies) {
    rocpd::memory_copy_info m;
    m.pid = pid;
    m.tid = tid_of(c.correlation);
    m.start_ns = i64(c.start);
    m.end_ns = i64(c.end);
    m.name = copy_name(c.kind);
    m.src_agent_id = host_side(c.src_kind) ? host_agent : (c.peer ? c.src_device : c.device);
    m.dst_agent_id = host_side(c.dst_kind) ? host_agent : (c.peer ? c.dst_device : c.device);
    m.size_bytes = i64(c.bytes);
    m.stream_id = stream_of(c.context, c.stream);
    m.correlation_id = c.correlation;
    rocpd::event_info e;
    e.category = "MEMORY_COPY";
    e.stack_id = c.correlation;
    e.parent_stack_id = c.correlation;
    json ext = {{"copy_kind", c.kind},
                {"src_kind", memory_kind_name(c.src_kind)},
                {"dst_kind", memory_kind_name(c.dst_kind)},
                {"device", c.device},
                {"context", c.context},
                {"cuda_stream", c.stream},
                {"async", c.async}};
    if (c.peer) {
      ext["src_device"] = c.src_device;
      ext["dst_device"] = c.dst_device;
    }
    if (const auto it = corr_api.find(c.correlation); it != corr_api.end()) ext["api"] = it->second;
    e.extdata = ext.dump();
    m.event_id = w.add_event(e);
    w.add_memory_copy(m);
  }

  // Memsets: rocpd has no memset table (HIP fills are kernels); they become regions with GPU
  // timestamps, category CUDA_MEMSET.
  for (const memset_rec& ms : s.memsets) {
    rocpd::region_info r;
    r.id = region_id(0);
    r.pid = pid;
    r.tid = tid_of(ms.correlation);
    r.start_ns = i64(ms.start);
    r.end_ns = i64(ms.end);
    r.name = "MEMORY_SET";
    r.category = "CUDA_MEMSET";
    r.correlation_id = ms.correlation;
    r.event_extdata = json{{"device", ms.device},
                           {"context", ms.context},
                           {"cuda_stream", ms.stream},
                           {"stream_id", stream_of(ms.context, ms.stream)},
                           {"bytes", ms.bytes},
                           {"value", ms.value},
                           {"memory_kind", memory_kind_name(ms.memory_kind)},
                           {"gpu_timestamps", true}}
                          .dump();
    w.add_region(r);
  }

  // Synchronization records.
  for (const sync_rec& sy : s.syncs) {
    rocpd::region_info r;
    r.id = region_id(0);
    r.pid = pid;
    r.tid = tid_of(sy.correlation);
    r.start_ns = i64(sy.start);
    r.end_ns = i64(sy.end);
    const char* name = sync_name(sy.type);
    r.name = name != nullptr ? name : "CUDA_SYNCHRONIZATION_" + std::to_string(sy.type);
    r.category = "CUDA_SYNCHRONIZATION";
    r.correlation_id = sy.correlation;
    json ext = {{"type", sy.type}, {"context", sy.context}, {"return_value", sy.return_value}};
    const std::int64_t dev = device_of_context(sy.context);
    if (dev >= 0) ext["device"] = dev;
    // The stream and event ids are only meaningful for some types (CUPTI puts ~0 otherwise).
    if (sy.stream != 0 && sy.stream != ~0u) {
      ext["cuda_stream"] = sy.stream;
      ext["stream_id"] = stream_of(sy.context, sy.stream);
    }
    if (sy.event != 0 && sy.event != ~0u) ext["event_id"] = sy.event;
    if (sy.event_sync_id != 0 && sy.event_sync_id != ~0ull && sy.event_sync_id != 0xffffffffull) {
      ext["event_sync_id"] = sy.event_sync_id;
    }
    if (const auto it = corr_api.find(sy.correlation); it != corr_api.end()) ext["api"] = it->second;
    r.event_extdata = ext.dump();
    w.add_region(r);
  }

  w.commit();
  return path;
}

// ---------------------------------------------------------------------------------------------
// Exit

void finish() {
  state* g = g_state;
  if (g == nullptr || getpid() != g->pid) {
    return; // a fork()ed child without exec: the parent writes its own records
  }
  {
    std::lock_guard<std::mutex> lock(g->mutex);
    if (g->finished) {
      return;
    }
  }
  try {
    std::uint64_t end_ns = 0;
    if (cuptiGetTimestamp(&end_ns) != CUPTI_SUCCESS) {
      end_ns = 0;
    }
    // Forced: also hand over buffers that are not full, and records of contexts CUDA already
    // destroyed (the runtime may have been torn down before this handler).
    cupti_ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) {
      dropped = 0;
    }
    snapshot s;
    {
      std::lock_guard<std::mutex> lock(g->mutex);
      g->finished = true;
      s.kernels = std::move(g->kernels);
      s.copies = std::move(g->copies);
      s.memsets = std::move(g->memsets);
      s.syncs = std::move(g->syncs);
      s.apis = std::move(g->apis);
      s.devices = g->devices;
      s.context_device = g->context_device;
      s.dropped = g->dropped + dropped;
      s.runtime_records = g->runtime_records;
      s.driver_records = g->driver_records;
      s.incomplete = g->incomplete;
      s.other = g->other_records;
      s.buffers = g->buffers_completed;
      s.alloc_failures = g->buffer_alloc_failures;
    }
    if (end_ns == 0) {
      for (const kernel_rec& k : s.kernels) end_ns = std::max(end_ns, k.end);
      for (const api_rec& a : s.apis) end_ns = std::max(end_ns, a.end);
    }
    const std::filesystem::path path = write_database(s, std::max(end_ns, g->start_ns));
    if (s.dropped != 0) {
      warn(std::to_string(s.dropped) + " activity records were dropped (CUPTI had no buffer); " +
           path.string() + " is incomplete");
    }
    if (g->verbose) {
      warn("wrote " + path.string() + ": " + std::to_string(s.kernels.size()) + " dispatches, " +
           std::to_string(s.copies.size()) + " copies, " + std::to_string(s.apis.size()) +
           " API calls, " + std::to_string(s.syncs.size()) + " synchronizations");
    }
  } catch (const std::exception& e) {
    warn(std::string("could not write the trace database: ") + e.what());
  } catch (...) {
    warn("could not write the trace database: unknown error");
  }
}

void at_exit_handler() { finish(); }

std::atomic<bool> g_initialized{false};

} // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (g_initialized.exchange(true)) {
    return 1;
  }
  try {
    if (env_or("RPL_TRACE_DISABLE", "0") == "1") {
      return 1;
    }
    auto* g = new state;
    g->pid = getpid();
    g->verbose = env_or("RPL_TRACE_VERBOSE", "0") == "1";
    std::filesystem::path dir = env_or("RPL_TRACE_DIR", "./rocm-perf-trace");
    std::error_code ec;
    if (dir.is_relative()) {
      const auto cwd = std::filesystem::current_path(ec);
      if (!ec) dir = cwd / dir; // resolved now: the program may chdir before it exits
    }
    g->out_dir = dir;
    const long mb = std::strtol(env_or("RPL_CUPTI_BUFFER_MB", "8").c_str(), nullptr, 10);
    g->buffer_bytes = static_cast<std::size_t>(mb >= 1 && mb <= 1024 ? mb : 8) << 20;
    fill_api_names(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, g->runtime_names,
                   &g->runtime_raw, g->runtime_keep, keep_runtime);
    fill_api_names(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, g->driver_names,
                   nullptr, g->driver_keep, keep_driver);
    g_state = g;

    // Thread ids as the OS knows them (gettid), so they match /proc and rocpd's tid columns.
    cupti_ok(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType");
    if (!cupti_ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                  "cuptiActivityRegisterCallbacks")) {
      return 1; // nothing would be delivered: trace nothing, write nothing
    }
    if (cuptiGetTimestamp(&g->start_ns) != CUPTI_SUCCESS) {
      g->start_ns = 0;
    }
    const std::pair<CUpti_ActivityKind, const char*> kinds[] = {
        {CUPTI_ACTIVITY_KIND_DEVICE, "cuptiActivityEnable(DEVICE)"},
        {CUPTI_ACTIVITY_KIND_CONTEXT, "cuptiActivityEnable(CONTEXT)"},
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "cuptiActivityEnable(CONCURRENT_KERNEL)"},
        {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)"},
        {CUPTI_ACTIVITY_KIND_MEMCPY2, "cuptiActivityEnable(MEMCPY2)"},
        {CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)"},
        {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "cuptiActivityEnable(SYNCHRONIZATION)"},
        {CUPTI_ACTIVITY_KIND_RUNTIME, "cuptiActivityEnable(RUNTIME)"},
    };
    for (const auto& [kind, what] : kinds) {
      const CUptiResult r = cuptiActivityEnable(kind);
      // DEVICE and CONTEXT are descriptive only: the driver API fills agents at exit anyway.
      if (r != CUPTI_SUCCESS && (kind == CUPTI_ACTIVITY_KIND_DEVICE || kind == CUPTI_ACTIVITY_KIND_CONTEXT)) {
        if (g->verbose) cupti_ok(r, what);
        continue;
      }
      cupti_ok(r, what);
    }
    // Driver API: only the launch/copy/synchronize calls (cheap), unless RPL_CUPTI_DRIVER_API=0.
    if (env_or("RPL_CUPTI_DRIVER_API", "1") != "0") {
      bool reported = false;
      for (std::uint32_t cbid = 1; cbid < g->driver_keep.size(); ++cbid) {
        if (g->driver_keep[cbid] == 0) continue;
        const CUptiResult r = cuptiActivityEnableDriverApi(cbid, 1);
        if (r != CUPTI_SUCCESS && !reported) {
          reported = true;
          cupti_ok(r, ("cuptiActivityEnableDriverApi(" + g->driver_names[cbid] + ")").c_str());
        }
      }
    }
    if (std::atexit(at_exit_handler) != 0) {
      warn("atexit failed: no trace database will be written");
    }
  } catch (const std::exception& e) {
    warn(std::string("initialization failed: ") + e.what());
  } catch (...) {
    warn("initialization failed: unknown error");
  }
  return 1;
}
