#include "stages/trace/cupti_mapping.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <utility>

#include <cxxabi.h>

namespace rpl::stages::cupti {
namespace {

using json = nlohmann::json;

std::int64_t i64(std::uint64_t value) {
  return static_cast<std::int64_t>(value);
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

/// CUPTI marks "no such id" with all bits set, in 32 or 64 bits.
bool valid_id(std::uint64_t id) {
  return id != 0 && id != ~0ull;
}

/// Key of a kernel symbol: one per (device, kernel name).
struct symbol_key {
  std::uint32_t device = 0;
  std::string_view name;
  bool operator==(const symbol_key& other) const {
    return device == other.device && name == other.name;
  }
};

struct symbol_key_hash {
  std::size_t operator()(const symbol_key& key) const {
    return std::hash<std::string_view>{}(key.name) * 31u + key.device;
  }
};

/// The CUDA properties of a device, from the driver where it gave them, else from CUPTI's device
/// record (a fallback of 0 means "CUPTI does not know either": the key is left out).
json device_properties(std::uint32_t ordinal,
                       const driver_device& d,
                       const device_record& c,
                       bool have_cupti) {
  json ext = json::object();
  ext["vendor"] = "NVIDIA";
  ext["device_ordinal"] = ordinal;
  const auto put = [&](const char* key, const std::optional<int>& value, std::int64_t fallback) {
    if (value) {
      ext[key] = static_cast<std::int64_t>(*value);
    } else if (fallback != 0) {
      ext[key] = fallback;
    }
  };
  put("sm_count", d.sm_count, c.multiprocessor_count);
  put("clock_khz", d.clock_khz, c.core_clock_khz);
  put("memory_clock_khz", d.memory_clock_khz, 0);
  put("memory_bus_width", d.memory_bus_width, 0);
  put("warp_size", d.warp_size, c.threads_per_warp);
  put("max_threads_per_sm", d.max_threads_per_sm,
      static_cast<std::int64_t>(c.max_warps_per_sm) * c.threads_per_warp);
  put("max_blocks_per_sm", d.max_blocks_per_sm, c.max_blocks_per_sm);
  put("max_threads_per_block", d.max_threads_per_block, c.max_threads_per_block);
  put("shared_memory_per_sm", d.shared_memory_per_sm, c.max_shared_memory_per_sm);
  put("shared_memory_per_block_optin", d.shared_memory_per_block_optin, 0);
  put("shared_memory_per_block", d.shared_memory_per_block, c.max_shared_memory_per_block);
  put("registers_per_sm", d.registers_per_sm, c.max_registers_per_sm);
  put("l2_cache_bytes", d.l2_cache_bytes, c.l2_cache_bytes);
  put("async_engine_count", d.async_engine_count, c.memcpy_engines);
  put("pci_bus_id", d.pci_bus_id, 0);
  put("pci_device_id", d.pci_device_id, 0);
  put("pci_domain_id", d.pci_domain_id, 0);
  if (d.gpu_pci_device_id) {
    ext["gpu_pci_device_id"] = static_cast<std::uint32_t>(*d.gpu_pci_device_id);
  }
  if (d.memory_bytes) {
    ext["memory_bytes"] = *d.memory_bytes;
  } else if (c.global_memory_bytes != 0) {
    ext["memory_bytes"] = c.global_memory_bytes;
  }
  if (c.global_memory_bandwidth_kbps != 0) {
    ext["memory_bandwidth_kbps"] = c.global_memory_bandwidth_kbps;
  }
  if (have_cupti) {
    ext["mig_enabled"] = c.mig_enabled;
  }
  if (d.uuid) {
    ext["uuid"] = *d.uuid;
  }
  if (!d.available && !have_cupti) {
    ext["unavailable"] = "neither the driver nor CUPTI described this device";
  }
  return ext;
}

/// rocprofiler-style aliases, so generic readers find the usual keys.
void add_rocprofiler_aliases(json& ext) {
  if (ext.contains("sm_count")) {
    ext["cu_count"] = ext["sm_count"];
  }
  if (ext.contains("warp_size")) {
    ext["wave_front_size"] = ext["warp_size"];
  }
  if (ext.contains("clock_khz")) {
    ext["max_engine_clk_fcompute"] = ext["clock_khz"].get<std::int64_t>() / 1000; // MHz
  }
}

} // namespace

// ---- Names -------------------------------------------------------------------------------------

std::string_view kernel_name(const char* cupti_name) {
  return cupti_name != nullptr ? std::string_view(cupti_name)
                               : std::string_view("<unknown kernel>");
}

std::string canonical_api_name(std::string name) {
  if (const auto v = name.rfind("_v");
      v != std::string::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<long>(v) + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
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

bool keep_runtime_api(std::string_view n) {
  return starts_with(n, "cudaLaunch") || starts_with(n, "cudaGraphLaunch") ||
         starts_with(n, "cudaMemcpy") || starts_with(n, "cudaMemset") ||
         n == "cudaStreamSynchronize" || n == "cudaDeviceSynchronize" ||
         n == "cudaEventSynchronize" || n == "cudaStreamWaitEvent" ||
         starts_with(n, "cudaEventRecord") || n == "cudaThreadSynchronize";
}

bool keep_driver_api(std::string_view n) {
  return starts_with(n, "cuLaunchKernel") || starts_with(n, "cuLaunchCooperativeKernel") ||
         starts_with(n, "cuGraphLaunch") || starts_with(n, "cuMemcpy") ||
         starts_with(n, "cuMemset") || n == "cuStreamSynchronize" || n == "cuCtxSynchronize" ||
         n == "cuEventSynchronize" || n == "cuStreamWaitEvent" || starts_with(n, "cuEventRecord");
}

std::string agent_name(int compute_capability_major, int compute_capability_minor) {
  return "sm_" + std::to_string(compute_capability_major) +
         std::to_string(compute_capability_minor);
}

std::string model_name(std::string product) {
  if (starts_with(product, "NVIDIA ")) {
    product.erase(0, 7);
  }
  if (const auto space = product.find(' '); space != std::string::npos) {
    product.erase(space);
  }
  return product;
}

std::string copy_name(std::uint8_t copy_kind) {
  switch (copy_kind) {
  case memcpy_kind::host_to_device:
  case memcpy_kind::host_to_array: return "MEMORY_COPY_HOST_TO_DEVICE";
  case memcpy_kind::device_to_host:
  case memcpy_kind::array_to_host: return "MEMORY_COPY_DEVICE_TO_HOST";
  case memcpy_kind::device_to_device:
  case memcpy_kind::array_to_array:
  case memcpy_kind::array_to_device:
  case memcpy_kind::device_to_array:
  case memcpy_kind::peer_to_peer: return "MEMORY_COPY_DEVICE_TO_DEVICE";
  case memcpy_kind::host_to_host: return "MEMORY_COPY_HOST_TO_HOST";
  default: return "MEMORY_COPY_UNKNOWN";
  }
}

const char* memory_kind_name(unsigned kind) {
  switch (kind) {
  case memory_kind::pageable: return "PAGEABLE";
  case memory_kind::pinned: return "PINNED";
  case memory_kind::device: return "DEVICE";
  case memory_kind::array: return "ARRAY";
  case memory_kind::managed: return "MANAGED";
  case memory_kind::device_static: return "DEVICE_STATIC";
  case memory_kind::managed_static: return "MANAGED_STATIC";
  default: return "UNKNOWN";
  }
}

bool host_side(unsigned kind) {
  return kind == memory_kind::pageable || kind == memory_kind::pinned;
}

std::string synchronization_name(std::uint32_t type) {
  switch (type) {
  case synchronization_type::event_synchronize: return "cudaEventSynchronize";
  case synchronization_type::stream_wait_event: return "cudaStreamWaitEvent";
  case synchronization_type::stream_synchronize: return "cudaStreamSynchronize";
  case synchronization_type::context_synchronize: return "cudaDeviceSynchronize";
  default: return "CUDA_SYNCHRONIZATION_" + std::to_string(type);
  }
}

std::string json_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
  return out;
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

json environment_json(const char* const* environ) {
  json env = json::object();
  for (const char* const* e = environ; e != nullptr && *e != nullptr; ++e) {
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
    if (!std::all_of(value.begin(), value.end(), [](char c) {
          return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
        })) {
      continue;
    }
    env[std::string(entry.substr(0, eq))] = std::string(value);
  }
  return env;
}

// ---- Rows --------------------------------------------------------------------------------------

std::set<std::uint32_t> devices_used(const cupti_trace& trace) {
  std::set<std::uint32_t> used;
  for (const kernel_record& k : trace.kernels) {
    used.insert(k.device_id);
  }
  for (const memcpy_record& c : trace.copies) {
    used.insert(c.device_id);
    if (c.peer) {
      used.insert(c.src_device_id);
      used.insert(c.dst_device_id);
    }
  }
  for (const memset_record& m : trace.memsets) {
    used.insert(m.device_id);
  }
  for (const auto& [context, device] : trace.context_device) {
    used.insert(device);
  }
  return used;
}

std::set<std::int64_t> thread_ids(const cupti_trace& trace) {
  std::set<std::int64_t> ids{trace.host.pid};
  for (const api_record& a : trace.apis) {
    ids.insert(static_cast<std::int64_t>(a.thread_id));
  }
  return ids;
}

std::uint64_t process_end_ns(const cupti_trace& trace, std::uint64_t clock_now_ns) {
  std::uint64_t end_ns = clock_now_ns;
  if (end_ns == 0) {
    for (const kernel_record& k : trace.kernels) {
      end_ns = std::max(end_ns, k.end_ns);
    }
    for (const api_record& a : trace.apis) {
      end_ns = std::max(end_ns, a.end_ns);
    }
  }
  return std::max(end_ns, trace.start_ns);
}

rocpd::agent_info
gpu_agent(std::uint32_t ordinal, const driver_device* driver, const device_record* cupti) {
  const driver_device no_driver;
  const device_record no_cupti;
  const driver_device& d = driver != nullptr ? *driver : no_driver;
  const device_record& c = cupti != nullptr ? *cupti : no_cupti;
  const std::string product = json_safe(d.name ? *d.name : c.name);
  const int major = d.compute_capability_major ? *d.compute_capability_major
                                               : static_cast<int>(c.compute_capability_major);
  const int minor = d.compute_capability_minor ? *d.compute_capability_minor
                                               : static_cast<int>(c.compute_capability_minor);
  json ext = device_properties(ordinal, d, c, cupti != nullptr);
  ext["compute_capability"] = std::to_string(major) + "." + std::to_string(minor);
  add_rocprofiler_aliases(ext);

  rocpd::agent_info agent;
  agent.id = ordinal;
  agent.type = "GPU";
  agent.absolute_index = ordinal;
  agent.logical_index = ordinal;
  agent.type_index = ordinal;
  // rocprofv3 keeps the PCI device id here: the high half of the combined device/vendor id.
  agent.uuid =
      d.gpu_pci_device_id
          ? static_cast<std::int64_t>(static_cast<std::uint32_t>(*d.gpu_pci_device_id) >> 16)
          : 0;
  agent.name = agent_name(major, minor);
  agent.model_name = model_name(product);
  agent.vendor_name = "NVIDIA";
  agent.product_name = product;
  agent.extdata = std::move(ext);
  return agent;
}

rocpd::kernel_symbol_info
kernel_symbol(const kernel_record& kernel, std::int64_t id, std::int64_t pid) {
  rocpd::kernel_symbol_info symbol;
  symbol.id = id;
  symbol.pid = pid;
  symbol.code_object_id = static_cast<std::int64_t>(kernel.device_id) + 1;
  const std::string name(kernel.name);
  symbol.kernel_name = json_safe(name);
  symbol.display_name = json_safe(demangle(name));
  symbol.kernarg_segment_alignment = 8;
  symbol.group_segment_size = kernel.static_shared_memory;      // static shared memory per block
  symbol.private_segment_size = kernel.local_memory_per_thread; // local memory per thread
  symbol.sgpr_count = 0;
  // For NVIDIA agents arch_vgpr_count means registers per thread: this is what our occupancy
  // analysis reads (there are no scalar or accumulation registers on NVIDIA).
  symbol.arch_vgpr_count = kernel.registers_per_thread;
  symbol.accum_vgpr_count = 0;
  symbol.extdata = {{"registers_per_thread", kernel.registers_per_thread},
                    {"static_shared_memory", kernel.static_shared_memory},
                    {"local_memory_per_thread", kernel.local_memory_per_thread},
                    {"device", kernel.device_id},
                    {"vendor", "NVIDIA"}};
  return symbol;
}

// ---- The whole trace ---------------------------------------------------------------------------

namespace {

/// Maps one trace, keeping the ids it hands out (threads by correlation, streams, symbols, regions)
/// so that later rows refer to earlier ones.
class trace_mapper {
public:
  trace_mapper(const cupti_trace& trace, rocpd_sink& sink)
      : trace_(trace), sink_(sink), pid_(trace.host.pid), used_(devices_used(trace)) {}

  void run() {
    sink_.add_node(node());
    sink_.add_process(process());
    threads();
    agents();
    queues_and_code_objects();
    kernel_symbols();
    api_regions();
    dispatches();
    copies();
    memsets();
    synchronizations();
    event_records();
  }

private:
  rocpd::node_info node() const {
    const host_facts& host = trace_.host;
    rocpd::node_info node;
    node.machine_id = host.machine_id.empty() ? host.hostname : host.machine_id;
    node.hostname = host.hostname;
    if (host.uname) {
      node.system_name = host.uname->system_name;
      node.release = host.uname->release;
      node.version = host.uname->version;
      node.hardware_name = host.uname->hardware_name;
    }
    return node;
  }

  rocpd::process_info process() const {
    const host_facts& host = trace_.host;
    const record_counts& counts = trace_.counts;
    rocpd::process_info process;
    process.pid = pid_;
    process.ppid = host.ppid;
    process.init_ns = process.start_ns = i64(trace_.start_ns);
    process.fini_ns = process.end_ns = i64(trace_.end_ns);
    process.command = json_safe(host.command);
    process.environment = host.environment;
    process.extdata = {{"tracer", "rpl_cupti_tracer"},
                       {"dropped_records", counts.dropped},
                       {"incomplete_records", counts.incomplete},
                       {"runtime_api_records", counts.runtime_api},
                       {"driver_api_records", counts.driver_api},
                       {"other_records", counts.other},
                       {"activity_buffers", counts.buffers},
                       {"buffer_allocation_failures", counts.allocation_failures},
                       {"cupti_api_version", host.cupti_version},
                       {"cupti_header_version", host.cupti_header_version},
                       {"cuda_driver_version", host.cuda_driver_version},
                       {"timestamps", "CUPTI (cuptiGetTimestamp clock), ns"},
                       {"agent_vgpr_meaning", "NVIDIA: arch_vgpr_count = registers per thread"}};
    return process;
  }

  /// The main thread plus every thread that made a kept API call, spanning its calls.
  void threads() {
    std::map<std::int64_t, std::pair<std::uint64_t, std::uint64_t>> spans;
    spans[pid_] = {trace_.start_ns, trace_.end_ns};
    for (const api_record& a : trace_.apis) {
      correlation_tid_.emplace(a.correlation_id, a.thread_id);
      correlation_span_.emplace(a.correlation_id, std::make_pair(a.start_ns, a.end_ns));
      auto [it, inserted] = spans.emplace(static_cast<std::int64_t>(a.thread_id),
                                          std::make_pair(a.start_ns, a.end_ns));
      if (!inserted) {
        it->second.first = std::min(it->second.first, a.start_ns);
        it->second.second = std::max(it->second.second, a.end_ns);
      }
    }
    for (const auto& [tid, span] : spans) {
      rocpd::thread_info thread;
      thread.tid = tid;
      thread.pid = pid_;
      thread.ppid = trace_.host.ppid;
      thread.start_ns = i64(span.first);
      thread.end_ns = i64(span.second);
      const auto name = trace_.host.thread_names.find(tid);
      thread.name =
          name != trace_.host.thread_names.end() ? json_safe(name->second) : std::string();
      sink_.add_thread(thread);
    }
  }

  /// One GPU agent per device used (id = ordinal), and one CPU agent (id one past the largest
  /// ordinal) when a copy has a host side.
  void agents() {
    for (const std::uint32_t d : used_) {
      host_agent_ = std::max(host_agent_, d + 1);
    }
    for (const std::uint32_t d : used_) {
      const auto driver = trace_.driver_devices.find(d);
      const auto cupti = trace_.devices.find(d);
      sink_.add_agent(gpu_agent(d,
                                driver != trace_.driver_devices.end() ? &driver->second : nullptr,
                                cupti != trace_.devices.end() ? &cupti->second : nullptr));
    }
    const bool any_host_copy =
        std::any_of(trace_.copies.begin(), trace_.copies.end(), [](const memcpy_record& c) {
          return host_side(c.src_kind) || host_side(c.dst_kind) ||
                 c.copy_kind == memcpy_kind::host_to_host;
        });
    if (any_host_copy) {
      rocpd::agent_info cpu;
      cpu.id = host_agent_;
      cpu.type = "CPU";
      cpu.absolute_index = host_agent_;
      cpu.logical_index = host_agent_;
      cpu.type_index = 0;
      cpu.name = "host";
      cpu.vendor_name = "CPU";
      cpu.product_name = "host";
      cpu.extdata = {{"role", "host side of CUDA memory copies"}};
      sink_.add_agent(cpu);
    }
  }

  /// One queue per device ("Device <n>", id n + 1; 0 is rocprofv3's "Default Queue") and one
  /// placeholder code object per device (CUPTI does not trace module loads here).
  void queues_and_code_objects() {
    for (const std::uint32_t d : used_) {
      sink_.add_queue(pid_, "Device " + std::to_string(d), static_cast<std::int64_t>(d) + 1);
    }
    for (const std::uint32_t d : used_) {
      rocpd::code_object_info code_object;
      code_object.id = static_cast<std::int64_t>(d) + 1;
      code_object.pid = pid_;
      code_object.agent_id = d;
      code_object.uri = "cuda://device/" + std::to_string(d);
      code_object.storage_type = "MEMORY";
      code_object.extdata = {{"note", "placeholder: the CUDA modules loaded on this device"}};
      sink_.add_code_object(code_object);
    }
  }

  /// One symbol per distinct (device, name), numbered from 1 in record order.
  void kernel_symbols() {
    std::int64_t next_symbol = 1;
    for (const kernel_record& k : trace_.kernels) {
      const auto [it, inserted] = symbol_ids_.emplace(symbol_key{k.device_id, k.name}, next_symbol);
      if (inserted) {
        sink_.add_kernel_symbol(kernel_symbol(k, next_symbol++, pid_));
      }
    }
  }

  /// API calls keep id = correlation id (as rocprofv3). Runtime calls go first, so that a driver
  /// call sharing a runtime call's correlation id (an internal call) is dropped, not duplicated.
  void api_regions() {
    std::int64_t max_correlation = 0;
    for (const api_record& a : trace_.apis)
      max_correlation = std::max<std::int64_t>(max_correlation, a.correlation_id);
    for (const auto& s : trace_.syncs)
      max_correlation = std::max<std::int64_t>(max_correlation, s.correlation_id);
    for (const auto& e : trace_.event_records)
      max_correlation = std::max<std::int64_t>(max_correlation, e.correlation_id);
    for (const auto& m : trace_.memsets)
      max_correlation = std::max<std::int64_t>(max_correlation, m.correlation_id);
    next_region_ = max_correlation + 1;

    std::vector<const api_record*> apis;
    apis.reserve(trace_.apis.size());
    for (const api_record& a : trace_.apis)
      apis.push_back(&a);
    std::stable_sort(apis.begin(), apis.end(), [](const api_record* a, const api_record* b) {
      return a->driver != b->driver ? !a->driver : a->start_ns < b->start_ns;
    });
    std::set<std::uint32_t> runtime_correlations;
    for (const api_record* a : apis) {
      if (a->driver && runtime_correlations.count(a->correlation_id) != 0) {
        continue;
      }
      if (!a->driver)
        runtime_correlations.insert(a->correlation_id);
      sink_.add_region(api_region(*a));
    }
  }

  rocpd::region_info api_region(const api_record& a) {
    const std::vector<std::string>& names = a.driver ? trace_.names.driver : trace_.names.runtime;
    const std::string name = a.cbid < names.size() && !names[a.cbid].empty()
                                 ? names[a.cbid]
                                 : "cbid_" + std::to_string(a.cbid);
    correlation_api_.emplace(a.correlation_id, name);
    rocpd::region_info r;
    r.id = region_id(a.correlation_id);
    r.pid = pid_;
    r.tid = a.thread_id;
    r.start_ns = i64(a.start_ns);
    r.end_ns = i64(a.end_ns);
    r.name = name;
    r.category = a.driver ? "CUDA_DRIVER_API" : "CUDA_RUNTIME_API";
    r.correlation_id = a.correlation_id;
    json ext = {{"cbid", a.cbid}, {"return_value", a.return_value}};
    const std::vector<std::string>& raw = trace_.names.runtime_raw;
    if (!a.driver && a.cbid < raw.size() && raw[a.cbid] != name) {
      ext["api"] = raw[a.cbid];
    }
    r.event_extdata = ext.dump();
    return r;
  }

  /// Dispatches in GPU start order (dispatch ids 1..N).
  void dispatches() {
    std::vector<const kernel_record*> kernels;
    kernels.reserve(trace_.kernels.size());
    for (const kernel_record& k : trace_.kernels)
      kernels.push_back(&k);
    std::stable_sort(
        kernels.begin(), kernels.end(),
        [](const kernel_record* a, const kernel_record* b) { return a->start_ns < b->start_ns; });
    std::int64_t dispatch_id = 0;
    for (const kernel_record* k : kernels) {
      sink_.add_dispatch(dispatch(*k, ++dispatch_id));
    }
  }

  rocpd::dispatch_info dispatch(const kernel_record& k, std::int64_t dispatch_id) {
    rocpd::dispatch_info d;
    d.dispatch_id = dispatch_id;
    d.pid = pid_;
    d.tid = tid_of(k.correlation_id);
    d.agent_id = k.device_id;
    d.kernel_id = symbol_ids_.at(symbol_key{k.device_id, k.name});
    d.queue_id = static_cast<std::int64_t>(k.device_id) + 1;
    d.stream_id = stream_of(k.context_id, k.stream_id);
    d.start_ns = i64(k.start_ns);
    d.end_ns = i64(k.end_ns);
    d.private_segment_size = k.local_memory_per_thread;
    d.group_segment_size =
        static_cast<std::int64_t>(k.static_shared_memory) + k.dynamic_shared_memory;
    for (std::size_t i = 0; i < 3; ++i) {
      d.workgroup[i] = k.block[i];
      // rocpd grid sizes are in work-items (AQL semantics): blocks x threads per block.
      d.grid[i] = static_cast<std::int64_t>(k.grid[i]) * k.block[i];
    }
    d.correlation_id = k.correlation_id;
    d.extdata = dispatch_extdata(k).dump();
    return d;
  }

  json dispatch_extdata(const kernel_record& k) const {
    json ext = {{"grid_blocks", {k.grid[0], k.grid[1], k.grid[2]}},
                {"device", k.device_id},
                {"context", k.context_id},
                {"cuda_stream", k.stream_id},
                {"registers_per_thread", k.registers_per_thread},
                {"static_shared_memory", k.static_shared_memory},
                {"dynamic_shared_memory", k.dynamic_shared_memory},
                {"shared_memory_executed", k.shared_memory_executed},
                {"local_memory_per_thread", k.local_memory_per_thread},
                {"local_memory_total", k.local_memory_total},
                {"launch_type", k.launch_type},
                {"cache_config_requested", k.cache_config_requested},
                {"cache_config_executed", k.cache_config_executed},
                {"grid_id", k.grid_id}};
    if (k.cluster[0] != 0)
      ext["cluster"] = {k.cluster[0], k.cluster[1], k.cluster[2]};
    if (k.graph_id != 0) {
      ext["graph_id"] = k.graph_id;
      ext["graph_node_id"] = k.graph_node_id;
    }
    if (k.device_launched)
      ext["device_launched"] = true;
    if (valid_id(k.queued_ns))
      ext["queued_ns"] = k.queued_ns;
    if (valid_id(k.submitted_ns))
      ext["submitted_ns"] = k.submitted_ns;
    add_api(ext, k.correlation_id);
    return ext;
  }

  void copies() {
    for (const memcpy_record& c : trace_.copies) {
      rocpd::memory_copy_info m;
      m.pid = pid_;
      m.tid = tid_of(c.correlation_id);
      m.start_ns = i64(c.start_ns);
      m.end_ns = i64(c.end_ns);
      m.name = copy_name(c.copy_kind);
      m.src_agent_id =
          host_side(c.src_kind) ? host_agent_ : (c.peer ? c.src_device_id : c.device_id);
      m.dst_agent_id =
          host_side(c.dst_kind) ? host_agent_ : (c.peer ? c.dst_device_id : c.device_id);
      m.size_bytes = i64(c.bytes);
      m.stream_id = stream_of(c.context_id, c.stream_id);
      m.correlation_id = c.correlation_id;
      rocpd::event_info e;
      e.category = "MEMORY_COPY";
      e.stack_id = c.correlation_id;
      e.parent_stack_id = c.correlation_id;
      json ext = {{"copy_kind", c.copy_kind},
                  {"src_kind", memory_kind_name(c.src_kind)},
                  {"dst_kind", memory_kind_name(c.dst_kind)},
                  {"device", c.device_id},
                  {"context", c.context_id},
                  {"cuda_stream", c.stream_id},
                  {"async", c.async}};
      if (c.peer) {
        ext["src_device"] = c.src_device_id;
        ext["dst_device"] = c.dst_device_id;
      }
      add_api(ext, c.correlation_id);
      e.extdata = ext.dump();
      sink_.add_memory_copy(e, std::move(m));
    }
  }

  /// A region of the process for an activity record of API call `correlation_id` (CUPTI's ids are
  /// 32-bit, as the records hold them), timed [start, end].
  rocpd::region_info record_region(std::uint32_t correlation_id,
                                   std::uint64_t start_ns,
                                   std::uint64_t end_ns,
                                   std::string name,
                                   std::string category) {
    rocpd::region_info r;
    r.id = region_id(0);
    r.pid = pid_;
    r.tid = tid_of(correlation_id);
    r.start_ns = i64(start_ns);
    r.end_ns = i64(end_ns);
    r.name = std::move(name);
    r.category = std::move(category);
    r.correlation_id = correlation_id;
    return r;
  }

  /// rocpd has no memset table (HIP fills are kernels): memsets become regions with GPU
  /// timestamps, category CUDA_MEMSET.
  void memsets() {
    for (const memset_record& ms : trace_.memsets) {
      rocpd::region_info r =
          record_region(ms.correlation_id, ms.start_ns, ms.end_ns, "MEMORY_SET", "CUDA_MEMSET");
      r.event_extdata = json{
          {"device", ms.device_id},
          {"context", ms.context_id},
          {"cuda_stream", ms.stream_id},
          {"stream_id", stream_of(ms.context_id, ms.stream_id)},
          {"bytes", ms.bytes},
          {"value", ms.value},
          {"memory_kind", memory_kind_name(ms.memory_kind)},
          {"gpu_timestamps",
           true}}.dump();
      sink_.add_region(r);
    }
  }

  void synchronizations() {
    for (const synchronization_record& sy : trace_.syncs) {
      rocpd::region_info r = record_region(sy.correlation_id, sy.start_ns, sy.end_ns,
                                           synchronization_name(sy.type), "CUDA_SYNCHRONIZATION");
      r.event_extdata = synchronization_extdata(sy).dump();
      sink_.add_region(r);
    }
  }

  /// Event records as regions named cudaEventRecord (category CUDA_EVENT), timed by their API
  /// call (the device time when there is no call), with the stream, the event and the instance
  /// that stream waits name: the critical path links a wait to the stream that recorded its event.
  void event_records() {
    for (const cuda_event_record& e : trace_.event_records) {
      const auto call = correlation_span_.find(e.correlation_id);
      const bool timed_by_call = call != correlation_span_.end();
      rocpd::region_info r = record_region(
          e.correlation_id, timed_by_call ? call->second.first : e.device_ns,
          timed_by_call ? call->second.second : e.device_ns, "cudaEventRecord", "CUDA_EVENT");
      json ext = {{"context", e.context_id},
                  {"cuda_stream", e.stream_id},
                  {"stream_id", stream_of(e.context_id, e.stream_id)},
                  {"event_id", e.event_id},
                  {"device", e.device_id}};
      if (valid_id(e.event_sync_id) && e.event_sync_id != 0xffffffffull)
        ext["event_sync_id"] = e.event_sync_id;
      if (e.device_ns != 0)
        ext["device_timestamp"] = e.device_ns;
      add_api(ext, e.correlation_id);
      r.event_extdata = ext.dump();
      sink_.add_region(r);
    }
  }

  json synchronization_extdata(const synchronization_record& sy) {
    json ext = {{"type", sy.type}, {"context", sy.context_id}, {"return_value", sy.return_value}};
    if (const auto it = trace_.context_device.find(sy.context_id);
        it != trace_.context_device.end()) {
      ext["device"] = static_cast<std::int64_t>(it->second);
    }
    // The stream and event ids are only meaningful for some types (CUPTI puts ~0 otherwise).
    if (sy.stream_id != 0 && sy.stream_id != ~0u) {
      ext["cuda_stream"] = sy.stream_id;
      ext["stream_id"] = stream_of(sy.context_id, sy.stream_id);
    }
    if (sy.cuda_event_id != 0 && sy.cuda_event_id != ~0u)
      ext["event_id"] = sy.cuda_event_id;
    if (valid_id(sy.cuda_event_sync_id) && sy.cuda_event_sync_id != 0xffffffffull) {
      ext["event_sync_id"] = sy.cuda_event_sync_id;
    }
    add_api(ext, sy.correlation_id);
    return ext;
  }

  /// The thread of the API call with this correlation id; the main thread when there is none.
  std::int64_t tid_of(std::uint32_t correlation) const {
    const auto it = correlation_tid_.find(correlation);
    return it != correlation_tid_.end() ? static_cast<std::int64_t>(it->second) : pid_;
  }

  /// The launching API's name, for a GPU activity's extdata.
  void add_api(json& ext, std::uint32_t correlation) const {
    if (const auto it = correlation_api_.find(correlation); it != correlation_api_.end()) {
      ext["api"] = it->second;
    }
  }

  /// The rocpd stream of a CUDA stream: its own id, or a fresh one when another context already
  /// uses that id. Adds the stream row on first use.
  std::int64_t stream_of(std::uint32_t context, std::uint32_t stream) {
    const auto key = std::make_pair(context, stream);
    if (const auto it = stream_ids_.find(key); it != stream_ids_.end()) {
      return it->second;
    }
    std::int64_t id = stream;
    if (taken_stream_ids_.count(id) != 0) {
      id = next_fresh_stream_++;
    }
    taken_stream_ids_.insert(id);
    stream_ids_.emplace(key, id);
    sink_.add_stream(pid_, "Stream " + std::to_string(stream), id);
    return id;
  }

  /// `wanted` when it is positive and free, else the next free id above every correlation id.
  std::int64_t region_id(std::int64_t wanted) {
    if (wanted > 0 && region_ids_.insert(wanted).second) {
      return wanted;
    }
    while (!region_ids_.insert(next_region_).second)
      ++next_region_;
    return next_region_++;
  }

  const cupti_trace& trace_;
  rocpd_sink& sink_;
  const std::int64_t pid_;
  const std::set<std::uint32_t> used_;
  std::uint32_t host_agent_ = 0;
  std::unordered_map<std::uint32_t, std::uint32_t> correlation_tid_;
  std::unordered_map<std::uint32_t, std::string> correlation_api_;
  std::unordered_map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> correlation_span_;
  std::unordered_map<symbol_key, std::int64_t, symbol_key_hash> symbol_ids_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::int64_t> stream_ids_; // (context, stream)
  std::set<std::int64_t> taken_stream_ids_{0}; // 0 is the process's "Default Stream"
  std::int64_t next_fresh_stream_ = 1ll << 40;
  std::set<std::int64_t> region_ids_;
  std::int64_t next_region_ = 1;
};

} // namespace

void map_trace(const cupti_trace& trace, rocpd_sink& sink) {
  trace_mapper(trace, sink).run();
}

// ---- The sink that writes ----------------------------------------------------------------------

void writer_sink::add_node(const rocpd::node_info& node) {
  writer_.add_node(node);
}
void writer_sink::add_process(const rocpd::process_info& process) {
  writer_.add_process(process);
}
void writer_sink::add_thread(const rocpd::thread_info& thread) {
  writer_.add_thread(thread);
}
void writer_sink::add_agent(const rocpd::agent_info& agent) {
  writer_.add_agent(agent);
}
void writer_sink::add_queue(std::int64_t pid, const std::string& name, std::int64_t id) {
  writer_.add_queue(pid, name, id);
}
void writer_sink::add_stream(std::int64_t pid, const std::string& name, std::int64_t id) {
  writer_.add_stream(pid, name, id);
}
void writer_sink::add_code_object(const rocpd::code_object_info& code_object) {
  writer_.add_code_object(code_object);
}
void writer_sink::add_kernel_symbol(const rocpd::kernel_symbol_info& symbol) {
  writer_.add_kernel_symbol(symbol);
}
void writer_sink::add_region(const rocpd::region_info& region) {
  writer_.add_region(region);
}
void writer_sink::add_dispatch(const rocpd::dispatch_info& dispatch) {
  writer_.add_dispatch(dispatch);
}
void writer_sink::add_memory_copy(const rocpd::event_info& event, rocpd::memory_copy_info copy) {
  copy.event_id = writer_.add_event(event);
  writer_.add_memory_copy(copy);
}

} // namespace rpl::stages::cupti
