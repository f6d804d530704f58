#pragma once
/// CUPTI activity records as plain structs, and the pure mapping that turns one process's records
/// into rocpd rows (the inputs of `rocpd::writer`). The CUPTI tracer (workers/tracers/cupti) copies
/// each CUPTI record into these structs and reads the host and the driver; everything it writes is
/// decided here, so the mapping is unit-tested without CUDA. No cupti.h here: the numeric codes
/// below mirror CUPTI's enums, and the tracer checks them against cupti.h at compile time.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/trace/rocpd_writer.hpp"

namespace rpl::stages::cupti {

/// CUpti_ActivityMemcpyKind.
namespace memcpy_kind {
inline constexpr std::uint8_t unknown = 0;
inline constexpr std::uint8_t host_to_device = 1;
inline constexpr std::uint8_t device_to_host = 2;
inline constexpr std::uint8_t host_to_array = 3;
inline constexpr std::uint8_t array_to_host = 4;
inline constexpr std::uint8_t array_to_array = 5;
inline constexpr std::uint8_t array_to_device = 6;
inline constexpr std::uint8_t device_to_array = 7;
inline constexpr std::uint8_t device_to_device = 8;
inline constexpr std::uint8_t host_to_host = 9;
inline constexpr std::uint8_t peer_to_peer = 10;
} // namespace memcpy_kind

/// CUpti_ActivityMemoryKind.
namespace memory_kind {
inline constexpr std::uint16_t unknown = 0;
inline constexpr std::uint16_t pageable = 1;
inline constexpr std::uint16_t pinned = 2;
inline constexpr std::uint16_t device = 3;
inline constexpr std::uint16_t array = 4;
inline constexpr std::uint16_t managed = 5;
inline constexpr std::uint16_t device_static = 6;
inline constexpr std::uint16_t managed_static = 7;
} // namespace memory_kind

/// CUpti_ActivitySynchronizationType.
namespace synchronization_type {
inline constexpr std::uint32_t unknown = 0;
inline constexpr std::uint32_t event_synchronize = 1;
inline constexpr std::uint32_t stream_wait_event = 2;
inline constexpr std::uint32_t stream_synchronize = 3;
inline constexpr std::uint32_t context_synchronize = 4;
} // namespace synchronization_type

/// CUPTI_ACTIVITY_KIND_KERNEL / CONCURRENT_KERNEL (CUpti_ActivityKernel10). Timestamps are
/// CUPTI's clock in ns; `name` must outlive the mapping (the tracer interns names).
struct kernel_record {
  std::uint64_t start_ns = 0, end_ns = 0, queued_ns = 0, submitted_ns = 0, completed_ns = 0;
  std::uint64_t graph_node_id = 0;
  std::uint64_t local_memory_total = 0; ///< bytes for the whole launch
  std::int64_t grid_id = 0;
  std::string_view name; ///< mangled; kernel_name() of CUPTI's pointer
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  std::int32_t grid[3] = {1, 1, 1};                                 ///< blocks
  std::int32_t block[3] = {1, 1, 1};                                ///< threads per block
  std::int32_t static_shared_memory = 0, dynamic_shared_memory = 0; ///< bytes per block
  std::uint32_t local_memory_per_thread = 0, shared_memory_executed = 0, graph_id = 0;
  std::uint32_t cluster[3] = {0, 0, 0};
  std::uint16_t registers_per_thread = 0;
  std::uint8_t launch_type = 0, cache_config_requested = 0, cache_config_executed = 0;
  bool device_launched = false;
};

/// CUPTI_ACTIVITY_KIND_MEMCPY (CUpti_ActivityMemcpy6) or MEMCPY2 (CUpti_ActivityMemcpyPtoP4,
/// `peer` set, with its source and destination devices).
struct memcpy_record {
  std::uint64_t start_ns = 0, end_ns = 0, bytes = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  std::uint32_t src_device_id = 0, dst_device_id = 0; ///< peer copies only; else device_id
  std::uint8_t copy_kind = memcpy_kind::unknown;
  std::uint8_t src_kind = 0, dst_kind = 0; ///< memory_kind codes
  bool peer = false;
  bool async = false;
};

/// CUPTI_ACTIVITY_KIND_MEMSET (CUpti_ActivityMemset4).
struct memset_record {
  std::uint64_t start_ns = 0, end_ns = 0, bytes = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0, value = 0;
  std::uint16_t memory_kind = memory_kind::unknown;
};

/// CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (CUpti_ActivitySynchronization2). CUPTI puts ~0 in the
/// stream and event ids of types that have none.
struct synchronization_record {
  std::uint64_t start_ns = 0, end_ns = 0, cuda_event_sync_id = 0;
  std::uint32_t type = synchronization_type::unknown, correlation_id = 0, context_id = 0;
  std::uint32_t stream_id = 0, cuda_event_id = 0, return_value = 0;
};

/// CUPTI_ACTIVITY_KIND_CUDA_EVENT (CUpti_ActivityCudaEvent2): an event recorded on a stream.
/// `event_sync_id` is the instance a stream wait names
/// (synchronization_record::cuda_event_sync_id); `device_ns` when the GPU reached the record (0
/// unless device timestamps are on).
struct cuda_event_record {
  std::uint64_t device_ns = 0, event_sync_id = 0;
  std::uint32_t correlation_id = 0, context_id = 0, stream_id = 0, event_id = 0, device_id = 0;
};

/// CUPTI_ACTIVITY_KIND_RUNTIME or DRIVER (CUpti_ActivityAPI).
struct api_record {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t cbid = 0, process_id = 0, thread_id = 0, correlation_id = 0, return_value = 0;
  bool driver = false;
};

/// CUPTI_ACTIVITY_KIND_DEVICE (CUpti_ActivityDevice5): the fallback where the driver says nothing.
struct device_record {
  std::string name;
  std::uint64_t global_memory_bytes = 0, global_memory_bandwidth_kbps = 0;
  std::uint32_t id = 0, compute_capability_major = 0, compute_capability_minor = 0;
  std::uint32_t multiprocessor_count = 0, core_clock_khz = 0, threads_per_warp = 0;
  std::uint32_t l2_cache_bytes = 0, max_warps_per_sm = 0, max_blocks_per_sm = 0;
  std::uint32_t max_shared_memory_per_sm = 0, max_registers_per_sm = 0;
  std::uint32_t max_shared_memory_per_block = 0, max_threads_per_block = 0;
  std::uint32_t memcpy_engines = 0;
  bool mig_enabled = false;
};

/// What the CUDA driver API said about one device at exit (cuDeviceGetAttribute and friends); an
/// empty optional is an attribute the driver did not give.
struct driver_device {
  bool available = false;          ///< cuDeviceGet worked
  std::optional<std::string> name; ///< cuDeviceGetName
  std::optional<int> compute_capability_major, compute_capability_minor;
  std::optional<int> sm_count, clock_khz, memory_clock_khz, memory_bus_width, warp_size;
  std::optional<int> max_threads_per_sm, max_blocks_per_sm, max_threads_per_block;
  std::optional<int> shared_memory_per_sm, shared_memory_per_block_optin, shared_memory_per_block;
  std::optional<int> registers_per_sm, l2_cache_bytes, async_engine_count;
  std::optional<int> pci_bus_id, pci_device_id, pci_domain_id;
  std::optional<int> gpu_pci_device_id; ///< device id (high 16 bits) and vendor id (low 16 bits)
  std::optional<std::uint64_t> memory_bytes; ///< cuDeviceTotalMem
  std::optional<std::string> uuid;           ///< "GPU-xxxxxxxx-xxxx-..."
};

/// The output of uname(2).
struct uname_facts {
  std::string system_name, release, version, hardware_name;
};

/// What the tracer reads about its host and process at exit.
struct host_facts {
  std::string hostname;   ///< gethostname, "localhost" when it fails
  std::string machine_id; ///< /etc/machine-id; empty: the hostname stands in
  std::optional<uname_facts> uname;
  std::int64_t pid = 0, ppid = 0;
  std::string command;                                   ///< /proc/self/cmdline with spaces
  nlohmann::json environment = nlohmann::json::object(); ///< see environment_json
  std::map<std::int64_t, std::string> thread_names;      ///< /proc/self/task/<tid>/comm
  int cupti_version = 0;                                 ///< cuptiGetVersion; 0 if unknown
  int cupti_header_version = 0; ///< CUPTI_API_VERSION the tracer was built with
  int cuda_driver_version = 0;  ///< cuDriverGetVersion; 0 if unknown
};

/// Counters over the activity buffers, kept in the process row's extdata.
struct record_counts {
  std::uint64_t dropped = 0;     ///< CUPTI's dropped-record count, summed
  std::uint64_t incomplete = 0;  ///< records without a valid start/end
  std::uint64_t runtime_api = 0; ///< every runtime API record, kept or not
  std::uint64_t driver_api = 0;
  std::uint64_t other = 0;   ///< kinds not mapped
  std::uint64_t buffers = 0; ///< activity buffers completed
  std::uint64_t allocation_failures = 0;
};

/// API names by callback id (cbid) in CUPTI's runtime and driver domains.
struct api_names {
  std::vector<std::string> runtime;     ///< canonical: "cudaLaunchKernel"
  std::vector<std::string> runtime_raw; ///< as CUPTI names it: "cudaLaunchKernel_v7000"
  std::vector<std::string> driver;      ///< canonical
};

/// Everything one traced process recorded, as the tracer hands it over at exit.
struct cupti_trace {
  std::vector<kernel_record> kernels;
  std::vector<memcpy_record> copies;
  std::vector<memset_record> memsets;
  std::vector<synchronization_record> syncs;
  std::vector<cuda_event_record> event_records;
  std::vector<api_record> apis; ///< kept calls only (keep_runtime_api, keep_driver_api)
  std::map<std::uint32_t, device_record> devices;        ///< CUPTI device records, by ordinal
  std::map<std::uint32_t, std::uint32_t> context_device; ///< context id -> device ordinal
  record_counts counts;
  std::uint64_t start_ns = 0; ///< when tracing started (CUPTI clock)
  std::uint64_t end_ns = 0;   ///< when the process ended; see process_end_ns
  host_facts host;
  std::map<std::uint32_t, driver_device> driver_devices; ///< by ordinal, for devices_used()
  api_names names;
};

/// The interface `map_trace` writes to: the subset of `rocpd::writer` it uses. `writer_sink`
/// forwards to a writer; tests record the rows.
class rocpd_sink {
public:
  virtual ~rocpd_sink() = default;
  virtual void add_node(const rocpd::node_info& node) = 0;
  virtual void add_process(const rocpd::process_info& process) = 0;
  virtual void add_thread(const rocpd::thread_info& thread) = 0;
  virtual void add_agent(const rocpd::agent_info& agent) = 0;
  virtual void add_queue(std::int64_t pid, const std::string& name, std::int64_t id) = 0;
  virtual void add_stream(std::int64_t pid, const std::string& name, std::int64_t id) = 0;
  virtual void add_code_object(const rocpd::code_object_info& code_object) = 0;
  virtual void add_kernel_symbol(const rocpd::kernel_symbol_info& symbol) = 0;
  virtual void add_region(const rocpd::region_info& region) = 0;
  virtual void add_dispatch(const rocpd::dispatch_info& dispatch) = 0;
  /// A copy with its own event: the sink adds `event` and sets the copy's event_id to it.
  virtual void add_memory_copy(const rocpd::event_info& event, rocpd::memory_copy_info copy) = 0;
};

/// A sink that writes to a rocpd writer.
class writer_sink final : public rocpd_sink {
public:
  explicit writer_sink(rocpd::writer& writer) : writer_(writer) {}
  void add_node(const rocpd::node_info& node) override;
  void add_process(const rocpd::process_info& process) override;
  void add_thread(const rocpd::thread_info& thread) override;
  void add_agent(const rocpd::agent_info& agent) override;
  void add_queue(std::int64_t pid, const std::string& name, std::int64_t id) override;
  void add_stream(std::int64_t pid, const std::string& name, std::int64_t id) override;
  void add_code_object(const rocpd::code_object_info& code_object) override;
  void add_kernel_symbol(const rocpd::kernel_symbol_info& symbol) override;
  void add_region(const rocpd::region_info& region) override;
  void add_dispatch(const rocpd::dispatch_info& dispatch) override;
  void add_memory_copy(const rocpd::event_info& event, rocpd::memory_copy_info copy) override;

private:
  rocpd::writer& writer_;
};

// ---- Names -------------------------------------------------------------------------------------

/// The name of a kernel record: CUPTI's name, or "<unknown kernel>" where it gave none.
std::string_view kernel_name(const char* cupti_name);

/// "cudaLaunchKernel_ptsz_v7000" -> "cudaLaunchKernel"; "__cudaLaunchKernel_v13000" ->
/// "cudaLaunchKernel" (CUDA 13 routes <<<>>> through __cudaLaunchKernel).
std::string canonical_api_name(std::string name);
/// Which runtime calls (canonical names) become regions: launches, copies/sets, synchronizing
/// calls.
bool keep_runtime_api(std::string_view name);
/// Which driver calls (canonical names) are traced and become regions; the same families.
bool keep_driver_api(std::string_view name);
/// The rocpd agent name of an NVIDIA device: "sm_90" for compute capability 9.0.
std::string agent_name(int compute_capability_major, int compute_capability_minor);
/// The model from a product name: "NVIDIA H100 80GB HBM3" -> "H100".
std::string model_name(std::string product);
/// rocprofv3's copy names: MEMORY_COPY_HOST_TO_DEVICE, ..._DEVICE_TO_HOST, ..._DEVICE_TO_DEVICE
/// (arrays and peers too), ..._HOST_TO_HOST, and MEMORY_COPY_UNKNOWN for other codes.
std::string copy_name(std::uint8_t copy_kind);
/// "PAGEABLE", "PINNED", "DEVICE", ...; "UNKNOWN" for other codes.
const char* memory_kind_name(unsigned kind);
/// Pageable and pinned memory are the host side of a copy (a CPU agent in rocpd).
bool host_side(unsigned kind);
/// The CUDA call a synchronization type stands for ("cudaStreamSynchronize", ...), or
/// "CUDA_SYNCHRONIZATION_<type>" for types CUPTI adds later.
std::string synchronization_name(std::uint32_t type);
/// Printable ASCII only ('?' elsewhere): nlohmann refuses invalid UTF-8 and rocpd readers expect
/// text.
std::string json_safe(std::string_view text);
/// The demangled C++ name, or `name` itself when it does not demangle.
std::string demangle(const std::string& name);
/// The environment as a JSON object, as rocprofv3 records it: entries whose value holds ';' or a
/// non-printable character are left out. `environ` is a null-terminated array of "KEY=VALUE".
nlohmann::json environment_json(const char* const* environ);

// ---- Rows --------------------------------------------------------------------------------------

/// The device ordinals the records use (kernels, copies with both peers, memsets, contexts).
std::set<std::uint32_t> devices_used(const cupti_trace& trace);
/// The thread ids the trace has rows for: the process's main thread and every API caller.
std::set<std::int64_t> thread_ids(const cupti_trace& trace);
/// The process's end: `clock_now_ns` when the clock could be read (non-zero), else the last
/// kernel or API end; never before `trace.start_ns`.
std::uint64_t process_end_ns(const cupti_trace& trace, std::uint64_t clock_now_ns);
/// The GPU agent of device `ordinal` (id = ordinal, name sm_XY, extdata = the device's
/// properties, the driver's where it gave them, else CUPTI's). Either source may be null.
rocpd::agent_info
gpu_agent(std::uint32_t ordinal, const driver_device* driver, const device_record* cupti);
/// The kernel symbol of a kernel record: arch_vgpr_count = registers per thread (what NVIDIA
/// agents mean by it), group_segment_size = static shared memory, private_segment_size = local
/// memory per thread, display_name demangled.
rocpd::kernel_symbol_info
kernel_symbol(const kernel_record& kernel, std::int64_t id, std::int64_t pid);

/// Writes the whole trace to `sink` in rocprofv3's order: node, process, threads, agents (one per
/// device used, plus a CPU agent when a copy touches host memory), queues ("Device <n>", id n+1),
/// code objects, kernel symbols (one per device and name), API regions (id = correlation id),
/// dispatches in GPU start order (ids 1..N), memory copies, memsets and synchronizations as
/// regions. Streams ("Stream <id>") are added on first use; a stream id seen in two contexts gets
/// a fresh id from 2^40 up.
void map_trace(const cupti_trace& trace, rocpd_sink& sink);

} // namespace rpl::stages::cupti
