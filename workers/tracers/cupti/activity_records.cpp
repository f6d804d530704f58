#include "workers/tracers/cupti/activity_records.hpp"

#include <utility>
#include <vector>

#include "workers/tracers/cupti/kernel_activity.hpp"

namespace rpl::workers::cupti_tracer {
namespace {

// The mapping names CUPTI's codes without including cupti.h; they must stay CUPTI's numbers.
static_assert(cupti::memcpy_kind::host_to_device == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
static_assert(cupti::memcpy_kind::device_to_host == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
static_assert(cupti::memcpy_kind::host_to_array == CUPTI_ACTIVITY_MEMCPY_KIND_HTOA);
static_assert(cupti::memcpy_kind::array_to_host == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH);
static_assert(cupti::memcpy_kind::array_to_array == CUPTI_ACTIVITY_MEMCPY_KIND_ATOA);
static_assert(cupti::memcpy_kind::array_to_device == CUPTI_ACTIVITY_MEMCPY_KIND_ATOD);
static_assert(cupti::memcpy_kind::device_to_array == CUPTI_ACTIVITY_MEMCPY_KIND_DTOA);
static_assert(cupti::memcpy_kind::device_to_device == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
static_assert(cupti::memcpy_kind::host_to_host == CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
static_assert(cupti::memcpy_kind::peer_to_peer == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
static_assert(cupti::memory_kind::pageable == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
static_assert(cupti::memory_kind::pinned == CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
static_assert(cupti::memory_kind::device == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
static_assert(cupti::memory_kind::array == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY);
static_assert(cupti::memory_kind::managed == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
static_assert(cupti::memory_kind::device_static == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC);
static_assert(cupti::memory_kind::managed_static == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC);
static_assert(cupti::synchronization_type::event_synchronize ==
              CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE);
static_assert(cupti::synchronization_type::stream_wait_event ==
              CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT);
static_assert(cupti::synchronization_type::stream_synchronize ==
              CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
static_assert(cupti::synchronization_type::context_synchronize ==
              CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);

/// GPU activities need both timestamps (kernel_activity.hpp: the replay reads kernels alike).
bool timed(std::uint64_t start, std::uint64_t end) {
  return gpu_span_complete(start, end);
}

void parse_kernel(const kernel_activity& k, parsed_records& out) {
  if (!timed(k.start, k.end)) {
    ++out.incomplete;
    return;
  }
  cupti::kernel_record r;
  r.start_ns = k.start;
  r.end_ns = k.end;
  r.queued_ns = k.queued;
  r.submitted_ns = k.submitted;
  r.completed_ns = k.completed;
  r.graph_node_id = k.graphNodeId;
  r.local_memory_total = k.localMemoryTotal_v2 != 0 ? k.localMemoryTotal_v2 : k.localMemoryTotal;
  r.grid_id = k.gridId;
  r.device_id = k.deviceId;
  r.context_id = k.contextId;
  r.stream_id = k.streamId;
  r.correlation_id = k.correlationId;
  r.grid[0] = k.gridX;
  r.grid[1] = k.gridY;
  r.grid[2] = k.gridZ;
  r.block[0] = k.blockX;
  r.block[1] = k.blockY;
  r.block[2] = k.blockZ;
  r.static_shared_memory = k.staticSharedMemory;
  r.dynamic_shared_memory = k.dynamicSharedMemory;
  r.local_memory_per_thread = k.localMemoryPerThread;
  r.shared_memory_executed = k.sharedMemoryExecuted;
  r.graph_id = k.graphId;
  r.cluster[0] = k.clusterX;
  r.cluster[1] = k.clusterY;
  r.cluster[2] = k.clusterZ;
  r.registers_per_thread = k.registersPerThread;
  r.launch_type = k.launchType;
  r.cache_config_requested = k.cacheConfig.config.requested;
  r.cache_config_executed = k.cacheConfig.config.executed;
  r.device_launched = k.isDeviceLaunched != 0;
  // The name is interned when the buffer is merged; CUPTI's pointer dies with the buffer.
  out.kernel_names.emplace_back(out.kernels.size(), std::string(cupti::kernel_name(k.name)));
  out.kernels.push_back(r);
  out.contexts.emplace_back(k.contextId, k.deviceId);
}

void parse_memcpy(const CUpti_ActivityMemcpy6& m, parsed_records& out) {
  if (!timed(m.start, m.end)) {
    ++out.incomplete;
    return;
  }
  cupti::memcpy_record r;
  r.start_ns = m.start;
  r.end_ns = m.end;
  r.bytes = m.bytes;
  r.device_id = m.deviceId;
  r.context_id = m.contextId;
  r.stream_id = m.streamId;
  r.correlation_id = m.correlationId;
  r.src_device_id = r.dst_device_id = m.deviceId;
  r.copy_kind = m.copyKind;
  r.src_kind = m.srcKind;
  r.dst_kind = m.dstKind;
  r.async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
  out.copies.push_back(r);
  out.contexts.emplace_back(m.contextId, m.deviceId);
}

void parse_peer_memcpy(const CUpti_ActivityMemcpyPtoP4& m, parsed_records& out) {
  if (!timed(m.start, m.end)) {
    ++out.incomplete;
    return;
  }
  cupti::memcpy_record r;
  r.start_ns = m.start;
  r.end_ns = m.end;
  r.bytes = m.bytes;
  r.device_id = m.deviceId;
  r.context_id = m.contextId;
  r.stream_id = m.streamId;
  r.correlation_id = m.correlationId;
  r.src_device_id = m.srcDeviceId;
  r.dst_device_id = m.dstDeviceId;
  r.copy_kind = m.copyKind;
  r.src_kind = m.srcKind;
  r.dst_kind = m.dstKind;
  r.peer = true;
  r.async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
  out.copies.push_back(r);
  out.contexts.emplace_back(m.contextId, m.deviceId);
}

void parse_memset(const CUpti_ActivityMemset4& m, parsed_records& out) {
  if (!timed(m.start, m.end)) {
    ++out.incomplete;
    return;
  }
  cupti::memset_record r;
  r.start_ns = m.start;
  r.end_ns = m.end;
  r.bytes = m.bytes;
  r.device_id = m.deviceId;
  r.context_id = m.contextId;
  r.stream_id = m.streamId;
  r.correlation_id = m.correlationId;
  r.value = m.value;
  r.memory_kind = m.memoryKind;
  out.memsets.push_back(r);
  out.contexts.emplace_back(m.contextId, m.deviceId);
}

void parse_synchronization(const CUpti_ActivitySynchronization2& s, parsed_records& out) {
  if (s.end < s.start) {
    ++out.incomplete;
    return;
  }
  cupti::synchronization_record r;
  r.start_ns = s.start;
  r.end_ns = s.end;
  r.cuda_event_sync_id = s.cudaEventSyncId;
  r.type = static_cast<std::uint32_t>(s.type);
  r.correlation_id = s.correlationId;
  r.context_id = s.contextId;
  r.stream_id = s.streamId;
  r.cuda_event_id = s.cudaEventId;
  r.return_value = s.returnValue;
  out.syncs.push_back(r);
}

void parse_cuda_event(const CUpti_ActivityCudaEvent2& e, parsed_records& out) {
  cupti::cuda_event_record r;
  r.device_ns = e.deviceTimestamp;
  r.event_sync_id = e.cudaEventSyncId;
  r.correlation_id = e.correlationId;
  r.context_id = e.contextId;
  r.stream_id = e.streamId;
  r.event_id = e.eventId;
  r.device_id = e.deviceId;
  out.event_records.push_back(r);
  out.contexts.emplace_back(e.contextId, e.deviceId);
}

void parse_api(const CUpti_ActivityAPI& a,
               bool driver,
               const tracer_state& state,
               parsed_records& out) {
  (driver ? out.driver_api : out.runtime_api) += 1;
  const std::vector<char>& keep = driver ? state.driver_keep : state.runtime_keep;
  if (a.cbid >= keep.size() || keep[a.cbid] == 0) {
    return;
  }
  if (a.end < a.start) {
    ++out.incomplete;
    return;
  }
  cupti::api_record r;
  r.start_ns = a.start;
  r.end_ns = a.end;
  r.cbid = a.cbid;
  r.process_id = a.processId;
  r.thread_id = a.threadId;
  r.correlation_id = a.correlationId;
  r.return_value = a.returnValue;
  r.driver = driver;
  out.apis.push_back(r);
}

void parse_device(const CUpti_ActivityDevice5& d, parsed_records& out) {
  cupti::device_record r;
  r.name = d.name != nullptr ? d.name : "";
  r.global_memory_bytes = d.globalMemorySize;
  r.global_memory_bandwidth_kbps = d.globalMemoryBandwidth;
  r.id = d.id;
  r.compute_capability_major = d.computeCapabilityMajor;
  r.compute_capability_minor = d.computeCapabilityMinor;
  r.multiprocessor_count = d.numMultiprocessors;
  r.core_clock_khz = d.coreClockRate;
  r.threads_per_warp = d.numThreadsPerWarp;
  r.l2_cache_bytes = d.l2CacheSize;
  r.max_warps_per_sm = d.maxWarpsPerMultiprocessor;
  r.max_blocks_per_sm = d.maxBlocksPerMultiprocessor;
  r.max_shared_memory_per_sm = d.maxSharedMemoryPerMultiprocessor;
  r.max_registers_per_sm = d.maxRegistersPerMultiprocessor;
  r.max_shared_memory_per_block = d.maxSharedMemoryPerBlock;
  r.max_threads_per_block = d.maxThreadsPerBlock;
  r.memcpy_engines = d.numMemcpyEngines;
  r.mig_enabled = d.isMigEnabled != 0;
  out.devices.push_back(std::move(r));
}

template <typename Record> const Record& as(const CUpti_Activity& record) {
  return *reinterpret_cast<const Record*>(&record);
}

} // namespace

void parse_record(const CUpti_Activity& record, const tracer_state& state, parsed_records& out) {
  if (const kernel_activity* kernel = as_kernel_activity(record)) {
    return parse_kernel(*kernel, out);
  }
  switch (record.kind) {
  case CUPTI_ACTIVITY_KIND_MEMCPY: return parse_memcpy(as<CUpti_ActivityMemcpy6>(record), out);
  case CUPTI_ACTIVITY_KIND_MEMCPY2:
    return parse_peer_memcpy(as<CUpti_ActivityMemcpyPtoP4>(record), out);
  case CUPTI_ACTIVITY_KIND_MEMSET: return parse_memset(as<CUpti_ActivityMemset4>(record), out);
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
    return parse_synchronization(as<CUpti_ActivitySynchronization2>(record), out);
  case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
    return parse_cuda_event(as<CUpti_ActivityCudaEvent2>(record), out);
  case CUPTI_ACTIVITY_KIND_RUNTIME:
  case CUPTI_ACTIVITY_KIND_DRIVER:
    return parse_api(as<CUpti_ActivityAPI>(record), record.kind == CUPTI_ACTIVITY_KIND_DRIVER,
                     state, out);
  case CUPTI_ACTIVITY_KIND_DEVICE: return parse_device(as<CUpti_ActivityDevice5>(record), out);
  case CUPTI_ACTIVITY_KIND_CONTEXT: {
    const auto& c = as<CUpti_ActivityContext3>(record);
    out.contexts.emplace_back(c.contextId, c.deviceId);
    return;
  }
  default: ++out.other; return;
  }
}

} // namespace rpl::workers::cupti_tracer
