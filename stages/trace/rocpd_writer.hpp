#pragma once
/// Writes rocpd databases (schema 3.0.0) the way rocprofv3 does: one file per process, suffixed
/// tables with unsuffixed and analysis views, explicit native ids (pid, tid, agent node id, queue
/// and stream handles, kernel id, dispatch id). Used by the test fixtures, the benches and our
/// CUPTI tracer, so that every consumer reads one format.

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "stages/trace/rocpd_schema.hpp"

namespace rpl::stages::rocpd {

// In every *_info below, an `id` of -1 lets SQLite pick the next one, and `nid`, `pid`, `tid` of 0
// mean "the node, process or thread added last" (a rocprofv3 file holds one process).

/// One machine (rocpd_info_node).
struct node_info {
  std::int64_t id = -1;   ///< -1: hash(machine_id) mod 2^32, as rocprofv3 derives it
  std::int64_t hash = -1; ///< -1: hash(machine_id) mod INT64_MAX
  std::string machine_id = "00000000000000000000000000000000";
  std::string system_name = "Linux";
  std::string hostname;
  std::string release;
  std::string version;
  std::string hardware_name = "x86_64";
  std::string domain_name;
};

/// One OS process (rocpd_info_process); its row id is the pid, as every `pid` column refers to it.
struct process_info {
  std::int64_t pid = 0;
  std::int64_t ppid = 0;
  std::int64_t nid = 0;
  std::int64_t init_ns = 0;
  std::int64_t fini_ns = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::string command;
  nlohmann::json environment = nlohmann::json::object();
  nlohmann::json extdata = nlohmann::json::object();
  /// rocprofv3 always writes queue 0 "Default Queue" and stream 0 "Default Stream" per process.
  bool default_queue_and_stream = true;
};

/// One host thread (rocpd_info_thread); its row id is the tid.
struct thread_info {
  std::int64_t tid = 0;
  std::int64_t pid = 0;
  std::int64_t ppid = 0;
  std::int64_t nid = 0;
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  nlohmann::json extdata = nlohmann::json::object();
};

/// One CPU or GPU agent (rocpd_info_agent); rocprofv3 uses the KFD node id as row id and
/// absolute_index.
struct agent_info {
  std::int64_t id = -1; ///< -1: absolute_index
  std::int64_t nid = 0;
  std::int64_t pid = 0;
  std::string type = "GPU"; ///< "GPU" or "CPU"
  std::int64_t absolute_index = 0;
  std::int64_t logical_index = 0;
  std::int64_t type_index = 0;
  std::int64_t uuid = 0;  ///< rocprofv3 stores the PCI device id here
  std::string name;       ///< the target: "gfx90a", "gfx942", "sm_90"
  std::string model_name; ///< "mi200", "H100"
  std::string vendor_name = "AMD";
  std::string product_name; ///< marketing name
  std::string user_name;    ///< empty: product_name, as rocprofv3 fills it
  nlohmann::json extdata =
      nlohmann::json::object(); ///< rocprofiler_agent_v0_t as JSON (cu_count, ...)
};

/// One loaded code object (rocpd_info_code_object).
struct code_object_info {
  std::int64_t id = -1;
  std::int64_t nid = 0;
  std::int64_t pid = 0;
  std::int64_t agent_id = 0;
  std::string uri;
  std::int64_t load_base = 0;
  std::int64_t load_size = 0;
  std::int64_t load_delta = 0;
  std::string storage_type = "FILE"; ///< "FILE" or "MEMORY"
  nlohmann::json extdata = nlohmann::json::object();
};

/// One kernel symbol (rocpd_info_kernel_symbol); rocprofv3's row id is the kernel id.
struct kernel_symbol_info {
  std::int64_t id = -1;
  std::int64_t nid = 0;
  std::int64_t pid = 0;
  std::int64_t code_object_id = 0;
  std::string kernel_name;  ///< raw (mangled) symbol name
  std::string display_name; ///< empty: kernel_name
  std::int64_t kernel_object = 0;
  std::int64_t kernarg_segment_size = 0;
  std::int64_t kernarg_segment_alignment = 8;
  std::int64_t group_segment_size = 0;   ///< static LDS bytes
  std::int64_t private_segment_size = 0; ///< static scratch bytes per work-item
  std::int64_t sgpr_count = 0;
  std::int64_t arch_vgpr_count = 0;
  std::int64_t accum_vgpr_count = 0;
  nlohmann::json extdata = nlohmann::json::object();
};

/// One rocpd_event row: what an activity row hangs its category and correlation ids on.
struct event_info {
  std::string
      category; ///< rocprofiler buffer-tracing kind: "KERNEL_DISPATCH", "HIP_RUNTIME_API_EXT"
  std::int64_t stack_id = 0;        ///< internal correlation id
  std::int64_t parent_stack_id = 0; ///< internal id of the parent (the launching API call)
  std::int64_t correlation_id = 0;  ///< external correlation id
  std::string extdata;              ///< JSON text; empty: "{}"
};

/// One kernel dispatch (rocpd_kernel_dispatch). Grid sizes are in work-items (AQL semantics).
struct dispatch_info {
  std::int64_t dispatch_id = 0; ///< also the row id; 0: one more than the previous
  std::int64_t nid = 0;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::int64_t agent_id = 0;
  std::int64_t kernel_id = 0;
  std::int64_t queue_id = 0;             ///< 0: the process's "Default Queue"
  std::int64_t stream_id = 0;            ///< 0: the process's "Default Stream"
  std::int64_t start_ns = 0;             ///< GPU begin timestamp
  std::int64_t end_ns = 0;               ///< GPU end timestamp
  std::int64_t private_segment_size = 0; ///< runtime scratch bytes per work-item
  std::int64_t group_segment_size = 0;   ///< runtime LDS bytes per workgroup (static + dynamic)
  std::array<std::int64_t, 3> workgroup{1, 1, 1};
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::string region_name; ///< ROCTx range for --kernel-rename; empty: the '' string row
  /// 0: a new KERNEL_DISPATCH event with stack_id = correlation_id; otherwise an existing event.
  std::int64_t event_id = 0;
  std::int64_t correlation_id = 0; ///< internal correlation id (the launching API call's region id)
  std::int64_t external_correlation_id = 0;
  std::string extdata; ///< JSON text; empty: "{}"
};

/// One memory copy (rocpd_memory_copy).
struct memory_copy_info {
  std::int64_t id = -1;
  std::int64_t nid = 0;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::string name = "MEMORY_COPY_HOST_TO_DEVICE";
  std::int64_t dst_agent_id = 0;
  std::int64_t dst_address = 0;
  std::int64_t src_agent_id = 0;
  std::int64_t src_address = 0;
  std::int64_t size_bytes = 0;
  std::int64_t queue_id = -1; ///< -1: NULL, as rocprofv3 7.0 leaves it
  std::int64_t stream_id = 0;
  std::string region_name;
  std::int64_t event_id = 0; ///< 0: a new MEMORY_COPY event
  std::int64_t correlation_id = 0;
  std::int64_t external_correlation_id = 0;
};

/// One host API call (rocpd_region); rocprofv3's row id is the call's internal correlation id.
struct region_info {
  std::int64_t id = -1; ///< -1: correlation_id when non-zero, else the next id
  std::int64_t nid = 0;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::string name;                             ///< "hipLaunchKernel", "cudaLaunchKernel"
  std::string category = "HIP_RUNTIME_API_EXT"; ///< the event category for a new event
  std::int64_t event_id = 0;                    ///< 0: a new event in `category`
  std::int64_t correlation_id = 0;              ///< internal correlation id
  std::int64_t external_correlation_id = 0;
  std::string event_extdata; ///< JSON text for the new event (ROCTx: {"message": ...}); empty: "{}"
};

/// One counter definition (rocpd_info_pmc).
struct pmc_info {
  std::int64_t id = -1;
  std::int64_t nid = 0;
  std::int64_t pid = 0;
  std::int64_t agent_id = 0;
  std::string name;
  std::string symbol; ///< empty: name
  std::string description;
  std::string block; ///< SQ, TCC, ...; empty for derived counters
  std::string expression;
  bool is_constant = false;
  bool is_derived = false;
  nlohmann::json extdata = nlohmann::json::object();
};

/// Writes one rocpd file. Everything goes into one open transaction (committed by `commit()` and
/// by the destructor), and events, dispatches, regions, copies and counter values are written 64
/// rows per statement, so a million dispatches take seconds. Those tables get explicit ids (running
/// counters unless given), and an error in them (a duplicate id) surfaces at the next full batch or
/// at commit(). An existing file is replaced, as rocprofv3 does. Not thread-safe: one writer per
/// thread.
class writer {
public:
  /// Creates `path` with the schema. `uuid`: dashed ("0197abcd-1234-7abc-8def-0123456789ab") or
  /// suffix form ("_0197abcd_1234_..."); empty generates a UUIDv7-like id. Throws rocpd_error.
  explicit writer(const std::filesystem::path& path, std::string uuid = {});
  ~writer(); ///< commits; errors at this point are swallowed (call commit() to see them)
  writer(writer&&) noexcept;
  writer& operator=(writer&&) noexcept;
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;

  std::int64_t add_node(const node_info& node);
  std::int64_t add_process(const process_info& process);
  std::int64_t add_thread(const thread_info& thread);
  std::int64_t add_agent(const agent_info& agent);
  /// A queue of `pid` (0: the last process); `id` -1: the next free id (rocprofv3: the handle).
  std::int64_t add_queue(std::int64_t pid, std::string_view name, std::int64_t id = -1);
  /// A stream of `pid` (0: the last process); `id` -1: the next free id (rocprofv3: the handle).
  std::int64_t add_stream(std::int64_t pid, std::string_view name, std::int64_t id = -1);
  std::int64_t add_code_object(const code_object_info& code_object);
  std::int64_t add_kernel_symbol(const kernel_symbol_info& symbol);
  /// The id of `text` in rocpd_string, inserted on first use.
  std::int64_t add_string(std::string_view text);
  std::int64_t add_event(const event_info& event);
  /// Shorthand for add_event with a category, an external correlation id and JSON extdata.
  std::int64_t add_event(std::string_view category,
                         std::int64_t correlation_id,
                         const nlohmann::json& extdata = nlohmann::json::object());
  /// Returns the dispatch id.
  std::int64_t add_dispatch(const dispatch_info& dispatch);
  std::int64_t add_memory_copy(const memory_copy_info& copy);
  std::int64_t add_region(const region_info& region);
  std::int64_t add_pmc_info(const pmc_info& counter);
  /// One counter value of the dispatch whose event is `event_id` (one row per dimension instance).
  std::int64_t add_pmc_event(std::int64_t event_id, std::int64_t pmc_id, double value);
  /// One argument of the API call whose event is `event_id` (rocpd_arg: position, C type, name,
  /// value as text, as rocprofv3 writes them; `extdata` JSON, e.g. {"stream_id": 2}).
  void add_arg(std::int64_t event_id,
               std::int64_t position,
               std::string_view type,
               std::string_view name,
               std::string_view value,
               std::string_view extdata = "{}");
  /// The event the last add_dispatch/add_memory_copy/add_region created or used (for PMC rows).
  std::int64_t last_event_id() const;
  /// One more row of rocpd_metadata (beside schema_version, uuid and guid, which the schema
  /// writes): a producer's own facts, such as whether the trace is complete
  /// (trace_completeness.hpp).
  void add_metadata(std::string_view tag, std::string_view value);

  /// Commits what was added so far and opens the next transaction.
  void commit();

  const std::filesystem::path& path() const;
  const std::string& guid() const;        ///< dashed
  const std::string& uuid_suffix() const; ///< "_" + guid with '-' as '_'

  /// A new UUIDv7-like id in dashed form: 48 bits of Unix milliseconds, then random bits.
  static std::string generate_uuid();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace rpl::stages::rocpd
