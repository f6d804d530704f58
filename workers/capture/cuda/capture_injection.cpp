// rpl_cuda_capture: captures one kernel dispatch of any CUDA program, loaded through
// CUDA_INJECTION64_PATH by `rocm-perf isolate` (engine/commands/isolate.cpp). With CUPTI's callback
// API it follows every device allocation (driver API: cuMemAlloc*, cuMemAllocAsync*, cuMemMap; the
// runtime's cudaMalloc goes through them), keeps each loaded module's image (the resource
// domain's module-loaded callback), and at the selected launch of a kernel whose name matches
// RPL_CAPTURE_KERNEL (the RPL_CAPTURE_DISPATCH-th, from 0) it synchronizes the context, writes the
// parameters (layout from cuFuncGetParamInfo), geometry, module image and every live allocation's
// contents, lets the launch run, synchronizes again and writes each allocation the dispatch
// changed. The capture directory's layout: stages/capture/capture_manifest.hpp.
//
// What it cannot hold it refuses, with the reason in capture_status.json, instead of writing a
// capture that a replay would get wrong: managed memory, parameters pointing at host memory,
// texture and surface objects, launches into a stream being captured into a graph, multi-device
// launches, launch attributes, live allocations on another device, a kernel whose module image it
// never saw. Kernels that run inside CUDA graphs are not seen as launches at all (said when the
// kernel is not found).
//
// Rules as the tracer's: never crash or stop the program; failures print one line prefixed
// "rocm-perf isolate:" and the program goes on.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include <cuda.h>
#include <cupti.h>

#include "stages/capture/capture_manifest.hpp"
#include "stages/trace/cupti_mapping.hpp"
#include "workers/capture/capture_directory.hpp"

namespace {

namespace fs = std::filesystem;
namespace sc = rpl::stages::capture;
namespace cap = rpl::workers::capture;

void warn(const std::string& text) {
  std::fprintf(stderr, "rocm-perf isolate: %s\n", text.c_str());
}

struct allocation {
  std::uint64_t size = 0;
  int device = -1;
  std::uint64_t order = 0; ///< the program's n-th allocation
};

struct capture_state {
  std::mutex mutex;
  fs::path out;
  std::regex pattern;
  std::string pattern_text;
  std::uint64_t wanted = 0;   ///< which matching launch
  std::uint64_t matched = 0;  ///< matching launches seen so far
  std::uint64_t launches = 0; ///< all launches seen
  std::uint64_t graph_launches = 0;
  std::uint64_t allocations = 0; ///< device allocations seen, for each one's order
  std::uint64_t unnamed = 0;     ///< launches whose function the driver would not name
  std::map<std::string, bool, std::less<>> matches_by_name; ///< kernel name -> matches the regex
  bool done = false;        ///< captured or refused: nothing more to do
  bool armed_after = false; ///< the selected launch is running: write the after-state at exit
  std::map<std::uint64_t, allocation> device; ///< base -> allocation (cuMemAlloc*, cuMemMap)
  std::map<std::uint64_t, std::uint64_t> managed;
  std::map<std::uint64_t, std::uint64_t> host; ///< pinned / registered host memory
  std::set<std::uint64_t> textures;            ///< texture and surface object handles
  std::vector<std::vector<char>> modules;      ///< module images as loaded
  // The selected launch, between its enter and exit callbacks.
  sc::dispatch_manifest manifest;
  std::vector<sc::memory_region> regions;
  std::vector<std::vector<std::uint8_t>> before;
};

capture_state* g = nullptr;

// The driver's own address-space reservations (mmap of PROT_NONE, no address, 64 MiB or more),
// recorded by the mmap below when rocm-perf isolate preloads this library (LD_PRELOAD): device
// allocations are carved from them, so a replay recreates them at the same addresses first.
// Written from inside mmap, which malloc itself calls: a fixed array, no allocation.
constexpr std::size_t max_pools = 4096;
sc::va_pool pools[max_pools];
std::atomic<std::size_t> pool_count{0};

thread_local bool inside = false; // our own driver calls do not count

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string cu_error(CUresult r) {
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  return name != nullptr ? name : "CUDA error " + std::to_string(static_cast<int>(r));
}

void write_status(const std::string& status, const std::string& reason, nlohmann::json extra = {}) {
  nlohmann::json doc = {{"status", status},
                        {"reason", reason},
                        {"kernel_regex", g->pattern_text},
                        {"dispatch", g->wanted},
                        {"matching_launches", g->matched},
                        {"launches", g->launches},
                        {"graph_launches", g->graph_launches},
                        {"unnamed_launches", g->unnamed}};
  for (auto& [key, value] : extra.items()) {
    doc[key] = value;
  }
  try {
    cap::write_text(g->out, cap::status_file, doc.dump(2) + "\n");
  } catch (const std::exception& error) {
    warn(error.what());
  }
}

void refuse(const std::string& reason) {
  g->done = true;
  g->armed_after = false;
  warn("refused to capture: " + reason);
  write_status("refused", reason);
}

/// Which range of `ranges` holds `address`, or end().
template <class Map> auto holder(const Map& ranges, std::uint64_t address) {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) {
    return ranges.end();
  }
  --it;
  const std::uint64_t size = [&] {
    if constexpr (std::is_same_v<typename Map::mapped_type, allocation>) {
      return it->second.size;
    } else {
      return it->second;
    }
  }();
  return address < it->first + size ? it : ranges.end();
}

/// The image of the module that holds `name` (a symbol's name appears in its string table).
const std::vector<char>* image_with(const std::string& name) {
  const std::string needle = name + '\0';
  for (auto it = g->modules.rbegin(); it != g->modules.rend(); ++it) {
    if (std::search(it->begin(), it->end(), needle.begin(), needle.end()) != it->end()) {
      return &*it;
    }
  }
  return nullptr;
}

/// The words of `bytes` (8-byte aligned) that point into host or managed memory: the first one,
/// described, or empty.
std::string points_outside(const std::uint8_t* bytes, std::size_t size, const std::string& what) {
  for (std::size_t at = 0; at + 8 <= size; at += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes + at, 8);
    if (word == 0) {
      continue;
    }
    if (holder(g->host, word) != g->host.end()) {
      return what + " holds a pointer into host memory (" + sc::hex_address(word) +
             ", pinned or registered): its contents are not device memory that a replay restores";
    }
    if (holder(g->managed, word) != g->managed.end()) {
      return what + " holds a pointer into managed memory (" + sc::hex_address(word) + ")";
    }
    if (g->textures.count(word) != 0 && what.rfind("parameter", 0) == 0) {
      return what + " is a texture or surface object (" + sc::hex_address(word) + ")";
    }
  }
  return {};
}

struct launch_view {
  CUfunction f = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared = 0;
  CUstream stream = nullptr;
  void** params = nullptr; ///< null when the launch passes them through `extra` (refused)
  unsigned attributes = 0;
  std::string attribute_ids;
  bool multi_device = false;
};

/// The launch of cuLaunchKernel's or cuLaunchCooperativeKernel's parameters (the same fields).
template <class Params> launch_view view_of(const Params* p) {
  launch_view l;
  l.f = p->f;
  l.grid[0] = p->gridDimX, l.grid[1] = p->gridDimY, l.grid[2] = p->gridDimZ;
  l.block[0] = p->blockDimX, l.block[1] = p->blockDimY, l.block[2] = p->blockDimZ;
  l.shared = p->sharedMemBytes;
  l.stream = p->hStream;
  l.params = p->kernelParams;
  return l;
}

/// Copies each live allocation to the host; false (and refuses) on a driver error.
bool snapshot(std::vector<std::vector<std::uint8_t>>& out) {
  out.clear();
  for (const auto& r : g->regions) {
    std::vector<std::uint8_t> bytes(r.size);
    const CUresult rc = cuMemcpyDtoH(bytes.data(), r.base, r.size);
    if (rc != CUDA_SUCCESS) {
      refuse("copying allocation " + sc::hex_address(r.base) + " (" + std::to_string(r.size) +
             " bytes) failed: " + cu_error(rc));
      return false;
    }
    out.push_back(std::move(bytes));
  }
  return true;
}

/// The selected launch, before it runs: everything but the after-state.
void capture_before(const launch_view& l, const std::string& name) {
  if (l.multi_device) {
    return refuse("a multi-device cooperative launch (cuLaunchCooperativeKernelMultiDevice)");
  }
  if (l.attributes > 0) {
    return refuse("the launch has " + std::to_string(l.attributes) + " launch attributes (ids " +
                  l.attribute_ids + "), which a replay does not restore yet");
  }
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cuStreamIsCapturing(l.stream, &capturing) == CUDA_SUCCESS &&
      capturing != CU_STREAM_CAPTURE_STATUS_NONE) {
    return refuse("the launch goes into a stream being captured into a CUDA graph: it does not "
                  "run now");
  }
  if (!g->managed.empty()) {
    return refuse(std::to_string(g->managed.size()) +
                  " managed allocations are live (cudaMallocManaged): the kernel may use them and "
                  "a replay cannot hold them");
  }
  CUdevice device = 0;
  CUresult rc = cuCtxGetDevice(&device);
  if (rc != CUDA_SUCCESS) {
    return refuse("cuCtxGetDevice: " + cu_error(rc));
  }
  for (const auto& [base, a] : g->device) {
    if (a.device != static_cast<int>(device)) {
      return refuse("allocation " + sc::hex_address(base) + " is on device " +
                    std::to_string(a.device) + ", the launch on device " +
                    std::to_string(static_cast<int>(device)) +
                    ": multi-device captures are not supported");
    }
  }
  // With lazy module loading the image may only arrive inside this launch: looked up again after.
  const std::vector<char>* image = image_with(name);
  // Parameter layout, then the bytes.
  auto& m = g->manifest;
  m = {};
  m.backend = "cuda";
  m.kernel = name;
  m.dispatch_index = g->wanted;
  for (int i = 0; i < 3; ++i) {
    m.grid[i] = l.grid[i];
    m.block[i] = l.block[i];
  }
  m.dynamic_shared_bytes = l.shared;
  std::vector<std::uint8_t> kernarg;
  if (l.params != nullptr) {
    for (std::size_t i = 0;; ++i) {
      size_t offset = 0;
      size_t size = 0;
      if (cuFuncGetParamInfo(l.f, i, &offset, &size) != CUDA_SUCCESS) {
        break;
      }
      m.params.push_back({static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(size)});
      if (kernarg.size() < offset + size) {
        kernarg.resize(offset + size);
      }
      std::memcpy(kernarg.data() + offset, l.params[i], size);
      if (auto why =
              points_outside(kernarg.data() + offset, size, "parameter " + std::to_string(i));
          !why.empty()) {
        return refuse(why);
      }
    }
  } else {
    return refuse(
        "the launch passes its parameters through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER), "
        "which the capture does not read yet");
  }
  char device_name[256] = {0};
  cuDeviceGetName(device_name, sizeof device_name, device);
  int major = 0;
  int minor = 0;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  m.device_name = device_name;
  m.arch = "sm_" + std::to_string(major * 10 + minor);
  m.device_ordinal = static_cast<int>(device);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  rc = cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (rc != CUDA_SUCCESS) {
    return refuse("cuMemGetAllocationGranularity: " + cu_error(rc));
  }
  m.granularity = granularity;
  for (std::size_t i = 0; i < std::min(pool_count.load(), max_pools); ++i) {
    m.driver_pools.push_back(pools[i]);
  }
  m.code_object_file = "code_object.cubin";
  m.pid = ::getpid();
  {
    std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
    std::string arg;
    while (std::getline(cmdline, arg, '\0')) {
      m.command.push_back(arg);
    }
  }
  // Everything the kernel can reach, once the work before it has finished.
  rc = cuCtxSynchronize();
  if (rc != CUDA_SUCCESS) {
    return refuse("the context failed before the launch: " + cu_error(rc));
  }
  g->regions.clear();
  for (const auto& [base, a] : g->device) {
    g->regions.push_back({base, a.size, sc::before_file_name(base), {}, a.order});
  }
  if (!snapshot(g->before)) {
    return;
  }
  for (std::size_t i = 0; i < g->regions.size(); ++i) {
    if (auto why = points_outside(g->before[i].data(), g->before[i].size(),
                                  "allocation " + sc::hex_address(g->regions[i].base));
        !why.empty()) {
      return refuse(why);
    }
  }
  try {
    fs::create_directories(g->out);
    cap::write_bytes(g->out, m.kernarg_file, kernarg.data(), kernarg.size());
    if (image != nullptr) {
      cap::write_bytes(g->out, m.code_object_file, image->data(), image->size());
    }
    for (std::size_t i = 0; i < g->regions.size(); ++i) {
      cap::write_bytes(g->out, g->regions[i].file, g->before[i].data(), g->before[i].size());
    }
  } catch (const std::exception& error) {
    return refuse(error.what());
  }
  // The process's mappings when captured (diagnostics: where the driver's areas were).
  {
    std::ifstream maps("/proc/self/maps");
    std::ostringstream text;
    text << maps.rdbuf();
    try {
      cap::write_text(g->out, "maps.txt", text.str());
    } catch (const std::exception&) {
    }
  }
  g->armed_after = true;
}

/// The selected launch has been issued: wait for it and write what it changed, then the manifests.
void capture_after() {
  g->armed_after = false;
  g->done = true;
  const CUresult rc = cuCtxSynchronize();
  if (rc != CUDA_SUCCESS) {
    return refuse("the captured dispatch failed on the GPU: " + cu_error(rc));
  }
  std::vector<std::vector<std::uint8_t>> after;
  if (!snapshot(after)) {
    return;
  }
  if (!fs::exists(g->out / g->manifest.code_object_file)) {
    const std::vector<char>* image = image_with(g->manifest.kernel);
    if (image == nullptr) {
      return refuse("no loaded module image holds " + g->manifest.kernel +
                    " (CUPTI's module-loaded callback never showed it)");
    }
    try {
      cap::write_bytes(g->out, g->manifest.code_object_file, image->data(), image->size());
    } catch (const std::exception& error) {
      return refuse(error.what());
    }
  }
  std::uint64_t changed = 0;
  std::uint64_t bytes = 0;
  try {
    for (std::size_t i = 0; i < g->regions.size(); ++i) {
      bytes += g->regions[i].size;
      if (after[i] != g->before[i]) {
        g->regions[i].after_file = sc::after_file_name(g->regions[i].base);
        cap::write_bytes(g->out, g->regions[i].after_file, after[i].data(), after[i].size());
        ++changed;
      }
    }
    cap::write_text(g->out, cap::regions_file, sc::regions_to_json(g->regions).dump(2) + "\n");
    cap::write_text(g->out, cap::dispatch_file, sc::to_json(g->manifest).dump(2) + "\n");
  } catch (const std::exception& error) {
    return refuse(error.what());
  }
  write_status("captured", "",
               {{"kernel", g->manifest.kernel},
                {"regions", g->regions.size()},
                {"changed_regions", changed},
                {"bytes", bytes}});
  g->before.clear();
}

/// Whether the kernel's mangled or demangled name matches; decided once per name, since every
/// launch of the program comes through here.
bool matches(const char* name) {
  const auto known = g->matches_by_name.find(std::string_view(name));
  if (known != g->matches_by_name.end()) {
    return known->second;
  }
  const bool match = std::regex_search(name, g->pattern) ||
                     std::regex_search(rpl::stages::cupti::demangle(name), g->pattern);
  g->matches_by_name.emplace(name, match);
  return match;
}

/// The launch's function as one cuFuncGetName and cuFuncGetParamInfo accept, and its name: the
/// CUDA runtime launches a CUkernel (a library's context-independent handle) cast to CUfunction,
/// which those refuse; cuKernelGetFunction gives the current context's function for it. A null
/// function when the driver names neither.
std::pair<CUfunction, const char*> named_function(CUfunction f) {
  const char* name = nullptr;
  if (cuFuncGetName(&name, f) == CUDA_SUCCESS && name != nullptr) {
    return {f, name};
  }
  CUfunction in_context = nullptr;
  if (cuKernelGetFunction(&in_context, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS &&
      cuFuncGetName(&name, in_context) == CUDA_SUCCESS && name != nullptr) {
    return {in_context, name};
  }
  return {nullptr, nullptr};
}

void on_launch(const CUpti_CallbackData* cb, launch_view l) {
  if (cb->callbackSite == CUPTI_API_EXIT) {
    if (g->armed_after) {
      if (*static_cast<CUresult*>(cb->functionReturnValue) != CUDA_SUCCESS) {
        return refuse("the captured launch returned " +
                      cu_error(*static_cast<CUresult*>(cb->functionReturnValue)));
      }
      capture_after();
    }
    return;
  }
  ++g->launches;
  const auto [function, name] = named_function(l.f);
  if (function == nullptr) {
    ++g->unnamed;
    return;
  }
  if (!matches(name) || g->matched++ != g->wanted) {
    return;
  }
  l.f = function;
  capture_before(l, name);
}

/// A device allocation the program just made, on the current context's device, in its order.
void track_device_allocation(CUdeviceptr base, std::uint64_t size) {
  CUdevice device = -1;
  cuCtxGetDevice(&device);
  g->device[base] = {size, static_cast<int>(device), g->allocations++};
}

/// The image of every module the driver loads (CUPTI's resource domain).
void keep_module_image(CUpti_CallbackId id, const void* data) {
  const auto* r = static_cast<const CUpti_ResourceData*>(data);
  if (id == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    const auto* mod = static_cast<const CUpti_ModuleResourceData*>(r->resourceDescriptor);
    if (mod != nullptr && mod->pCubin != nullptr && mod->cubinSize > 0) {
      g->modules.emplace_back(mod->pCubin, mod->pCubin + mod->cubinSize);
    }
  }
}

/// Follows the program's device, managed and host memory and its texture and surface objects;
/// other calls pass.
void track_memory(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  const bool exit = cb->callbackSite == CUPTI_API_EXIT;
  const bool ok = !exit || *static_cast<CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
  switch (id) {
  case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemAlloc_v2_params*>(cb->functionParams);
      track_device_allocation(*p->dptr, p->bytesize);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemAllocPitch_v2_params*>(cb->functionParams);
      track_device_allocation(*p->dptr, *p->pPitch * p->Height);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemAllocAsync_params*>(cb->functionParams);
      track_device_allocation(*p->dptr, p->bytesize);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemAllocFromPoolAsync_params*>(cb->functionParams);
      track_device_allocation(*p->dptr, p->bytesize);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemMap_params*>(cb->functionParams);
      track_device_allocation(p->ptr, p->size);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    if (!exit) {
      g->device.erase(static_cast<const cuMemFree_v2_params*>(cb->functionParams)->dptr);
      g->managed.erase(static_cast<const cuMemFree_v2_params*>(cb->functionParams)->dptr);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    if (!exit) {
      g->device.erase(static_cast<const cuMemFreeAsync_params*>(cb->functionParams)->dptr);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
    if (!exit) {
      g->device.erase(static_cast<const cuMemUnmap_params*>(cb->functionParams)->ptr);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemAllocManaged_params*>(cb->functionParams);
      g->managed[*p->dptr] = p->bytesize;
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemAllocHost_v2_params*>(cb->functionParams);
      g->host[reinterpret_cast<std::uint64_t>(*p->pp)] = p->bytesize;
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemHostAlloc_params*>(cb->functionParams);
      g->host[reinterpret_cast<std::uint64_t>(*p->pp)] = p->bytesize;
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2:
    if (exit && ok) {
      const auto* p = static_cast<const cuMemHostRegister_v2_params*>(cb->functionParams);
      g->host[reinterpret_cast<std::uint64_t>(p->p)] = p->bytesize;
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
    if (!exit) {
      g->host.erase(reinterpret_cast<std::uint64_t>(
          static_cast<const cuMemFreeHost_params*>(cb->functionParams)->p));
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
    if (!exit) {
      g->host.erase(reinterpret_cast<std::uint64_t>(
          static_cast<const cuMemHostUnregister_params*>(cb->functionParams)->p));
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuTexObjectCreate:
    if (exit && ok) {
      g->textures.insert(
          *static_cast<const cuTexObjectCreate_params*>(cb->functionParams)->pTexObject);
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuSurfObjectCreate:
    if (exit && ok) {
      g->textures.insert(
          *static_cast<const cuSurfObjectCreate_params*>(cb->functionParams)->pSurfObject);
    }
    break;
  default: break;
  }
}

/// The launch of cuLaunchKernelEx's parameters, with its launch attributes (a priority aside).
launch_view view_of(const cuLaunchKernelEx_params* p) {
  launch_view l;
  l.f = p->f;
  const CUlaunchConfig* c = p->config;
  l.grid[0] = c->gridDimX, l.grid[1] = c->gridDimY, l.grid[2] = c->gridDimZ;
  l.block[0] = c->blockDimX, l.block[1] = c->blockDimY, l.block[2] = c->blockDimZ;
  l.shared = c->sharedMemBytes;
  l.stream = c->hStream;
  l.params = p->kernelParams;
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    // A priority changes nothing a replay must reproduce; every other attribute might.
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
      continue;
    }
    ++l.attributes;
    l.attribute_ids +=
        (l.attribute_ids.empty() ? "" : ", ") + std::to_string(static_cast<int>(c->attrs[i].id));
  }
  return l;
}

/// cuLaunchCooperativeKernelMultiDevice, on entry: counted, and refused if it carries the
/// selected launch.
void on_multi_device_launch(const CUpti_CallbackData* cb) {
  ++g->launches;
  // Which kernels it carries would need its parameter list; any match is refused.
  const auto* p =
      static_cast<const cuLaunchCooperativeKernelMultiDevice_params*>(cb->functionParams);
  for (unsigned i = 0; i < p->numDevices; ++i) {
    const auto [function, name] = named_function(p->launchParamsList[i].function);
    if (function != nullptr && matches(name) && g->matched++ == g->wanted) {
      launch_view l;
      l.multi_device = true;
      capture_before(l, name);
    }
  }
}

/// Counts graph launches and hands kernel launches to on_launch; other calls pass.
void follow_launch(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  const bool exit = cb->callbackSite == CUPTI_API_EXIT;
  switch (id) {
  case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
  case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
    if (!exit) {
      ++g->graph_launches;
    }
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
    on_launch(cb, view_of(static_cast<const cuLaunchKernel_params*>(cb->functionParams)));
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
    auto l = view_of(static_cast<const cuLaunchCooperativeKernel_params*>(cb->functionParams));
    l.attributes = 1; // cooperative: grid-wide sync needs the same co-residency on replay
    l.attribute_ids = "cooperative";
    on_launch(cb, l);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    on_launch(cb, view_of(static_cast<const cuLaunchKernelEx_params*>(cb->functionParams)));
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice:
    if (!exit) {
      on_multi_device_launch(cb);
    }
    break;
  default: break;
  }
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (inside || g == nullptr) {
    return;
  }
  std::lock_guard lock(g->mutex);
  if (g->done && !g->armed_after) {
    return;
  }
  inside = true;
  try {
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      keep_module_image(id, data);
    } else {
      const auto* cb = static_cast<const CUpti_CallbackData*>(data);
      track_memory(id, cb);
      follow_launch(id, cb);
    }
  } catch (const std::exception& error) {
    warn(std::string("internal error: ") + error.what());
  }
  inside = false;
}

void at_exit() {
  if (g == nullptr) {
    return;
  }
  std::lock_guard lock(g->mutex);
  if (g->done) {
    return;
  }
  std::string reason = "the program made " + std::to_string(g->launches) + " kernel launches, " +
                       std::to_string(g->matched) + " of a kernel matching '" + g->pattern_text +
                       "'; dispatch " + std::to_string(g->wanted) + " was asked for";
  if (g->graph_launches > 0) {
    reason += "; it also launched " + std::to_string(g->graph_launches) +
              " CUDA graphs, whose kernels a capture does not see";
  }
  write_status("not_found", reason);
}

} // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  if (g != nullptr) {
    return 1;
  }
  const std::string out = env("RPL_CAPTURE_DIR");
  const std::string kernel = env("RPL_CAPTURE_KERNEL");
  if (out.empty() || kernel.empty()) {
    warn("RPL_CAPTURE_DIR and RPL_CAPTURE_KERNEL must be set (rocm-perf isolate sets them); "
         "capturing nothing");
    return 1;
  }
  auto* state = new capture_state;
  state->out = out;
  state->pattern_text = kernel;
  try {
    state->pattern = std::regex(kernel, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    warn("RPL_CAPTURE_KERNEL '" + kernel + "' is not a regular expression: " + error.what());
    return 1;
  }
  const std::string dispatch = env("RPL_CAPTURE_DISPATCH");
  state->wanted = dispatch.empty() ? 0 : std::strtoull(dispatch.c_str(), nullptr, 10);
  g = state;
  CUpti_SubscriberHandle subscriber = nullptr;
  if (cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(callback), nullptr) !=
      CUPTI_SUCCESS) {
    warn("cuptiSubscribe failed (is another CUPTI tool attached?); capturing nothing");
    write_status("refused", "CUPTI could not be attached (cuptiSubscribe failed)");
    g->done = true;
    return 1;
  }
  cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  const CUpti_CallbackId driver[] = {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemMap,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
                                     CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
                                     CUPTI_DRIVER_TRACE_CBID_cuTexObjectCreate,
                                     CUPTI_DRIVER_TRACE_CBID_cuSurfObjectCreate,
                                     CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
                                     CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
                                     CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                     CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                     CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                     CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                     CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                                     CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
                                     CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice};
  for (const auto id : driver) {
    if (cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id) != CUPTI_SUCCESS) {
      warn("cuptiEnableCallback failed for driver callback " + std::to_string(id));
    }
  }
  std::atexit(at_exit);
  return 1;
}

extern "C" __attribute__((visibility("default"))) void*
mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  void* result =
      reinterpret_cast<void*>(::syscall(SYS_mmap, address, length, prot, flags, fd, offset));
  if (result != MAP_FAILED && prot == PROT_NONE && fd == -1 && (flags & MAP_FIXED) == 0 &&
      length >= (std::size_t{2} << 20)) {
    const std::size_t i = pool_count.fetch_add(1);
    if (i < max_pools) {
      pools[i] = {reinterpret_cast<std::uint64_t>(result), length,
                  reinterpret_cast<std::uint64_t>(address)};
    }
  }
  return result;
}

extern "C" __attribute__((visibility("default"))) void*
mmap64(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  return mmap(address, length, prot, flags, fd, offset);
}
