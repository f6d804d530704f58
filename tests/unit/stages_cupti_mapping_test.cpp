#include <array>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/trace/cupti_mapping.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::cupti {
namespace {

using nlohmann::json;

/// Keeps every row map_trace produces, in order.
class recording_sink final : public rocpd_sink {
public:
  struct id_row {
    std::int64_t pid;
    std::string name;
    std::int64_t id;
  };
  std::vector<rocpd::node_info> nodes;
  std::vector<rocpd::process_info> processes;
  std::vector<rocpd::thread_info> threads;
  std::vector<rocpd::agent_info> agents;
  std::vector<id_row> queues;
  std::vector<id_row> streams;
  std::vector<rocpd::code_object_info> code_objects;
  std::vector<rocpd::kernel_symbol_info> symbols;
  std::vector<rocpd::region_info> regions;
  std::vector<rocpd::dispatch_info> dispatches;
  std::vector<std::pair<rocpd::event_info, rocpd::memory_copy_info>> copies;

  void add_node(const rocpd::node_info& node) override { nodes.push_back(node); }
  void add_process(const rocpd::process_info& process) override { processes.push_back(process); }
  void add_thread(const rocpd::thread_info& thread) override { threads.push_back(thread); }
  void add_agent(const rocpd::agent_info& agent) override { agents.push_back(agent); }
  void add_queue(std::int64_t pid, const std::string& name, std::int64_t id) override {
    queues.push_back({pid, name, id});
  }
  void add_stream(std::int64_t pid, const std::string& name, std::int64_t id) override {
    streams.push_back({pid, name, id});
  }
  void add_code_object(const rocpd::code_object_info& code_object) override {
    code_objects.push_back(code_object);
  }
  void add_kernel_symbol(const rocpd::kernel_symbol_info& symbol) override {
    symbols.push_back(symbol);
  }
  void add_region(const rocpd::region_info& region) override { regions.push_back(region); }
  void add_dispatch(const rocpd::dispatch_info& dispatch) override {
    dispatches.push_back(dispatch);
  }
  void add_memory_copy(const rocpd::event_info& event, rocpd::memory_copy_info copy) override {
    copies.emplace_back(event, std::move(copy));
  }

  const rocpd::region_info& region_named(const std::string& name) const {
    for (const auto& region : regions) {
      if (region.name == name)
        return region;
    }
    throw std::runtime_error("no region " + name);
  }
};

constexpr std::int64_t pid = 4242;

/// A trace of process 4242 with the runtime API names the tests use (cbid 1 = cudaLaunchKernel).
cupti_trace base_trace() {
  cupti_trace trace;
  trace.host.pid = pid;
  trace.host.ppid = 1;
  trace.host.hostname = "gpuhost";
  trace.start_ns = 1000;
  trace.end_ns = 9000;
  trace.names.runtime = {"", "cudaLaunchKernel", "cudaMemcpy", "cudaStreamSynchronize"};
  trace.names.runtime_raw = {"", "cudaLaunchKernel_v7000", "cudaMemcpy", "cudaStreamSynchronize"};
  trace.names.driver = {"", "cuLaunchKernel"};
  return trace;
}

kernel_record kernel(std::string_view name,
                     std::uint32_t device,
                     std::uint64_t start_ns,
                     std::uint64_t end_ns,
                     std::uint32_t correlation = 0) {
  kernel_record k;
  k.name = name;
  k.device_id = device;
  k.context_id = device + 1;
  k.stream_id = 7;
  k.start_ns = start_ns;
  k.end_ns = end_ns;
  k.correlation_id = correlation;
  return k;
}

api_record api(std::uint32_t cbid,
               std::uint32_t correlation,
               std::uint32_t tid,
               std::uint64_t start_ns,
               bool driver = false) {
  api_record a;
  a.cbid = cbid;
  a.correlation_id = correlation;
  a.thread_id = tid;
  a.process_id = static_cast<std::uint32_t>(pid);
  a.start_ns = start_ns;
  a.end_ns = start_ns + 50;
  a.driver = driver;
  return a;
}

recording_sink mapped(const cupti_trace& trace) {
  recording_sink sink;
  map_trace(trace, sink);
  return sink;
}

// ---- Names -------------------------------------------------------------------------------------

TEST(stages_cupti_mapping, canonical_api_names_drop_versions_stream_suffixes_and_underscores) {
  EXPECT_EQ(canonical_api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(canonical_api_name("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(canonical_api_name("__cudaLaunchKernel_v13000"), "cudaLaunchKernel");
  EXPECT_EQ(canonical_api_name("cudaMemcpyAsync_ptds"), "cudaMemcpyAsync");
  EXPECT_EQ(canonical_api_name("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
  EXPECT_EQ(canonical_api_name("cudaGetDevice_vx"), "cudaGetDevice_vx"); // not a version
  EXPECT_EQ(canonical_api_name(""), "");
}

TEST(stages_cupti_mapping, keeps_launch_copy_and_synchronizing_calls_only) {
  EXPECT_TRUE(keep_runtime_api("cudaLaunchKernel"));
  EXPECT_TRUE(keep_runtime_api("cudaGraphLaunch"));
  EXPECT_TRUE(keep_runtime_api("cudaMemcpyAsync"));
  EXPECT_TRUE(keep_runtime_api("cudaMemsetD32"));
  EXPECT_TRUE(keep_runtime_api("cudaStreamSynchronize"));
  EXPECT_TRUE(keep_runtime_api("cudaEventRecordWithFlags"));
  EXPECT_FALSE(keep_runtime_api("cudaMalloc"));
  EXPECT_FALSE(keep_runtime_api("cudaGetDevice"));
  EXPECT_TRUE(keep_driver_api("cuLaunchKernelEx"));
  EXPECT_TRUE(keep_driver_api("cuCtxSynchronize"));
  EXPECT_FALSE(keep_driver_api("cuCtxGetCurrent"));
  EXPECT_FALSE(keep_driver_api("cudaLaunchKernel"));
}

TEST(stages_cupti_mapping, names_nvidia_agents_by_compute_capability) {
  EXPECT_EQ(agent_name(9, 0), "sm_90");
  EXPECT_EQ(agent_name(8, 6), "sm_86");
  EXPECT_EQ(agent_name(10, 0), "sm_100");
  EXPECT_EQ(model_name("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(model_name("NVIDIA A100-SXM4-40GB"), "A100-SXM4-40GB");
  EXPECT_EQ(model_name("Tesla V100"), "Tesla");
  EXPECT_EQ(model_name(""), "");
}

TEST(stages_cupti_mapping, names_copies_memory_kinds_and_synchronizations_as_rocprofv3) {
  EXPECT_EQ(copy_name(memcpy_kind::host_to_device), "MEMORY_COPY_HOST_TO_DEVICE");
  EXPECT_EQ(copy_name(memcpy_kind::host_to_array), "MEMORY_COPY_HOST_TO_DEVICE");
  EXPECT_EQ(copy_name(memcpy_kind::device_to_host), "MEMORY_COPY_DEVICE_TO_HOST");
  EXPECT_EQ(copy_name(memcpy_kind::array_to_host), "MEMORY_COPY_DEVICE_TO_HOST");
  EXPECT_EQ(copy_name(memcpy_kind::device_to_device), "MEMORY_COPY_DEVICE_TO_DEVICE");
  EXPECT_EQ(copy_name(memcpy_kind::peer_to_peer), "MEMORY_COPY_DEVICE_TO_DEVICE");
  EXPECT_EQ(copy_name(memcpy_kind::array_to_device), "MEMORY_COPY_DEVICE_TO_DEVICE");
  EXPECT_EQ(copy_name(memcpy_kind::host_to_host), "MEMORY_COPY_HOST_TO_HOST");
  EXPECT_EQ(copy_name(memcpy_kind::unknown), "MEMORY_COPY_UNKNOWN");
  EXPECT_EQ(copy_name(42), "MEMORY_COPY_UNKNOWN");
  EXPECT_STREQ(memory_kind_name(memory_kind::pinned), "PINNED");
  EXPECT_STREQ(memory_kind_name(memory_kind::managed_static), "MANAGED_STATIC");
  EXPECT_STREQ(memory_kind_name(99), "UNKNOWN");
  EXPECT_TRUE(host_side(memory_kind::pageable));
  EXPECT_TRUE(host_side(memory_kind::pinned));
  EXPECT_FALSE(host_side(memory_kind::device));
  EXPECT_FALSE(host_side(memory_kind::managed));
  EXPECT_EQ(synchronization_name(synchronization_type::event_synchronize), "cudaEventSynchronize");
  EXPECT_EQ(synchronization_name(synchronization_type::stream_wait_event), "cudaStreamWaitEvent");
  EXPECT_EQ(synchronization_name(synchronization_type::stream_synchronize),
            "cudaStreamSynchronize");
  EXPECT_EQ(synchronization_name(synchronization_type::context_synchronize),
            "cudaDeviceSynchronize");
  EXPECT_EQ(synchronization_name(9), "CUDA_SYNCHRONIZATION_9");
}

TEST(stages_cupti_mapping, names_kernels_without_a_name_and_keeps_text_printable) {
  EXPECT_EQ(kernel_name(nullptr), "<unknown kernel>");
  EXPECT_EQ(kernel_name("_Z6kernelv"), "_Z6kernelv");
  EXPECT_EQ(json_safe("ok \xc3\xa9\t!"), "ok ??\?!");
  EXPECT_EQ(demangle("_ZN2ns4gemmIfLi128EEEvv"), "void ns::gemm<float, 128>()");
  EXPECT_EQ(demangle("plain_c_kernel"), "plain_c_kernel");
}

TEST(stages_cupti_mapping, records_the_environment_without_lists_and_binary_values) {
  const char* environment[] = {"PATH=/usr/bin", "LIST=a;b", "BINARY=\x01",
                               "NOEQUALS",      "EMPTY=",   nullptr};
  EXPECT_EQ(environment_json(environment), json({{"PATH", "/usr/bin"}, {"EMPTY", ""}}));
  EXPECT_EQ(environment_json(nullptr), json::object());
}

// ---- Agents and symbols ------------------------------------------------------------------------

TEST(stages_cupti_mapping, describes_a_device_from_the_driver_first) {
  driver_device driver;
  driver.available = true;
  driver.name = "NVIDIA H100 80GB HBM3";
  driver.compute_capability_major = 9;
  driver.compute_capability_minor = 0;
  driver.sm_count = 132;
  driver.clock_khz = 1980000;
  driver.warp_size = 32;
  driver.gpu_pci_device_id = static_cast<int>(0x233010deu);
  driver.memory_bytes = 85520809984ull;
  driver.uuid = "GPU-00112233-4455-6677-8899-aabbccddeeff";
  device_record cupti;
  cupti.name = "ignored";
  cupti.multiprocessor_count = 100;
  cupti.max_registers_per_sm = 65536;
  cupti.global_memory_bandwidth_kbps = 3352000000ull;
  const rocpd::agent_info agent = gpu_agent(1, &driver, &cupti);
  EXPECT_EQ(agent.id, 1);
  EXPECT_EQ(agent.type, "GPU");
  EXPECT_EQ(agent.absolute_index, 1);
  EXPECT_EQ(agent.type_index, 1);
  EXPECT_EQ(agent.name, "sm_90");
  EXPECT_EQ(agent.model_name, "H100");
  EXPECT_EQ(agent.vendor_name, "NVIDIA");
  EXPECT_EQ(agent.product_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(agent.uuid, 0x2330); // the PCI device id, as rocprofv3 stores it
  const json& ext = agent.extdata;
  EXPECT_EQ(ext["sm_count"], 132);
  EXPECT_EQ(ext["cu_count"], 132);
  EXPECT_EQ(ext["wave_front_size"], 32);
  EXPECT_EQ(ext["max_engine_clk_fcompute"], 1980);
  EXPECT_EQ(ext["registers_per_sm"], 65536); // CUPTI fills what the driver did not say
  EXPECT_EQ(ext["memory_bytes"], 85520809984ull);
  EXPECT_EQ(ext["memory_bandwidth_kbps"], 3352000000ull);
  EXPECT_EQ(ext["compute_capability"], "9.0");
  EXPECT_EQ(ext["gpu_pci_device_id"], 0x233010deu);
  EXPECT_EQ(ext["uuid"], "GPU-00112233-4455-6677-8899-aabbccddeeff");
  EXPECT_EQ(ext["mig_enabled"], false);
  EXPECT_FALSE(ext.contains("memory_clock_khz")); // neither source gave it
  EXPECT_FALSE(ext.contains("unavailable"));
}

TEST(stages_cupti_mapping, falls_back_to_cupti_and_says_when_nobody_described_a_device) {
  device_record cupti;
  cupti.name = "NVIDIA A100-SXM4-40GB";
  cupti.compute_capability_major = 8;
  cupti.multiprocessor_count = 108;
  cupti.threads_per_warp = 32;
  cupti.max_warps_per_sm = 64;
  cupti.global_memory_bytes = 40ull << 30;
  const rocpd::agent_info from_cupti = gpu_agent(0, nullptr, &cupti);
  EXPECT_EQ(from_cupti.name, "sm_80");
  EXPECT_EQ(from_cupti.model_name, "A100-SXM4-40GB");
  EXPECT_EQ(from_cupti.uuid, 0);
  EXPECT_EQ(from_cupti.extdata["sm_count"], 108);
  EXPECT_EQ(from_cupti.extdata["max_threads_per_sm"], 2048); // warps x warp size
  EXPECT_EQ(from_cupti.extdata["memory_bytes"], 40ull << 30);
  EXPECT_FALSE(from_cupti.extdata.contains("unavailable"));

  const rocpd::agent_info unknown = gpu_agent(3, nullptr, nullptr);
  EXPECT_EQ(unknown.name, "sm_00");
  EXPECT_EQ(unknown.product_name, "");
  EXPECT_EQ(unknown.extdata["unavailable"], "neither the driver nor CUPTI described this device");
  EXPECT_EQ(unknown.extdata["device_ordinal"], 3);
  EXPECT_FALSE(unknown.extdata.contains("mig_enabled"));
}

TEST(stages_cupti_mapping, kernel_symbols_carry_registers_per_thread_and_static_shared_memory) {
  kernel_record k = kernel("_ZN2ns4gemmIfLi128EEEvv", 2, 10, 20);
  k.registers_per_thread = 168;
  k.static_shared_memory = 8192;
  k.dynamic_shared_memory = 4096;
  k.local_memory_per_thread = 24;
  const rocpd::kernel_symbol_info symbol = kernel_symbol(k, 5, pid);
  EXPECT_EQ(symbol.id, 5);
  EXPECT_EQ(symbol.pid, pid);
  EXPECT_EQ(symbol.code_object_id, 3); // the device's placeholder code object
  EXPECT_EQ(symbol.kernel_name, "_ZN2ns4gemmIfLi128EEEvv");
  EXPECT_EQ(symbol.display_name, "void ns::gemm<float, 128>()");
  EXPECT_EQ(symbol.arch_vgpr_count, 168);
  EXPECT_EQ(symbol.accum_vgpr_count, 0);
  EXPECT_EQ(symbol.sgpr_count, 0);
  EXPECT_EQ(symbol.group_segment_size, 8192); // static only: dynamic is per launch
  EXPECT_EQ(symbol.private_segment_size, 24);
  EXPECT_EQ(symbol.kernarg_segment_alignment, 8);
  EXPECT_EQ(symbol.extdata["registers_per_thread"], 168);
  EXPECT_EQ(symbol.extdata["device"], 2);
  EXPECT_EQ(symbol.extdata["vendor"], "NVIDIA");
}

// ---- The whole trace ---------------------------------------------------------------------------

TEST(stages_cupti_mapping, maps_a_kernel_launch_to_a_dispatch_and_its_api_region) {
  cupti_trace trace = base_trace();
  trace.apis.push_back(api(1, 11, 5001, 1500));
  kernel_record k = kernel("_Z6kernelPfi", 0, 2000, 2600, 11);
  k.grid[0] = 40;
  k.grid[1] = 2;
  k.block[0] = 256;
  k.static_shared_memory = 1024;
  k.dynamic_shared_memory = 2048;
  k.local_memory_per_thread = 16;
  k.registers_per_thread = 64;
  k.queued_ns = ~0ull; // CUPTI's "unknown"
  k.submitted_ns = 1990;
  trace.kernels.push_back(k);
  const recording_sink sink = mapped(trace);

  ASSERT_EQ(sink.dispatches.size(), 1u);
  const rocpd::dispatch_info& d = sink.dispatches[0];
  EXPECT_EQ(d.dispatch_id, 1);
  EXPECT_EQ(d.pid, pid);
  EXPECT_EQ(d.tid, 5001); // the launching call's thread
  EXPECT_EQ(d.agent_id, 0);
  EXPECT_EQ(d.kernel_id, 1);
  EXPECT_EQ(d.queue_id, 1); // "Device 0"
  EXPECT_EQ(d.stream_id, 7);
  EXPECT_EQ(d.start_ns, 2000);
  EXPECT_EQ(d.end_ns, 2600);
  EXPECT_EQ(d.correlation_id, 11);
  EXPECT_EQ(d.group_segment_size, 3072); // static + dynamic
  EXPECT_EQ(d.private_segment_size, 16);
  EXPECT_EQ(d.workgroup, (std::array<std::int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(d.grid, (std::array<std::int64_t, 3>{10240, 2, 1})); // work-items
  const json ext = json::parse(d.extdata);
  EXPECT_EQ(ext["grid_blocks"], json({40, 2, 1}));
  EXPECT_EQ(ext["api"], "cudaLaunchKernel");
  EXPECT_EQ(ext["submitted_ns"], 1990);
  EXPECT_FALSE(ext.contains("queued_ns"));
  EXPECT_FALSE(ext.contains("cluster"));
  EXPECT_FALSE(ext.contains("graph_id"));

  ASSERT_EQ(sink.regions.size(), 1u);
  const rocpd::region_info& r = sink.regions[0];
  EXPECT_EQ(r.id, 11); // = correlation id, as rocprofv3
  EXPECT_EQ(r.name, "cudaLaunchKernel");
  EXPECT_EQ(r.category, "CUDA_RUNTIME_API");
  EXPECT_EQ(r.tid, 5001);
  EXPECT_EQ(r.start_ns, 1500);
  EXPECT_EQ(r.end_ns, 1550);
  EXPECT_EQ(json::parse(r.event_extdata),
            json({{"cbid", 1}, {"return_value", 0}, {"api", "cudaLaunchKernel_v7000"}}));

  ASSERT_EQ(sink.symbols.size(), 1u);
  EXPECT_EQ(sink.symbols[0].arch_vgpr_count, 64);
  ASSERT_EQ(sink.agents.size(), 1u);
  EXPECT_EQ(sink.agents[0].extdata["unavailable"],
            "neither the driver nor CUPTI described this device");
}

TEST(stages_cupti_mapping, orders_dispatches_by_gpu_start_and_keeps_zero_duration_kernels) {
  cupti_trace trace = base_trace();
  trace.kernels.push_back(kernel("b", 0, 3000, 3000)); // zero duration
  trace.kernels.push_back(kernel("a", 0, 2000, 2500));
  trace.kernels.push_back(kernel("c", 0, 3000, 3100)); // same start as "b": record order stays
  const recording_sink sink = mapped(trace);
  ASSERT_EQ(sink.dispatches.size(), 3u);
  EXPECT_EQ(sink.dispatches[0].dispatch_id, 1);
  EXPECT_EQ(sink.dispatches[0].kernel_id, 2); // "a": symbols are numbered in record order
  EXPECT_EQ(sink.dispatches[1].kernel_id, 1);
  EXPECT_EQ(sink.dispatches[1].start_ns, 3000);
  EXPECT_EQ(sink.dispatches[1].end_ns, 3000);
  EXPECT_EQ(sink.dispatches[2].kernel_id, 3);
  EXPECT_EQ(sink.dispatches[2].dispatch_id, 3);
  EXPECT_EQ(sink.dispatches[2].tid, pid); // no API call: the main thread
}

TEST(stages_cupti_mapping, gives_each_device_an_agent_queue_code_object_and_its_own_symbols) {
  cupti_trace trace = base_trace();
  trace.kernels.push_back(kernel("gemm", 0, 2000, 2100));
  trace.kernels.push_back(kernel("gemm", 2, 2200, 2300));
  trace.kernels.push_back(kernel("gemm", 0, 2400, 2500));
  trace.context_device[9] = 1; // a context on a device without kernels still makes it used
  const recording_sink sink = mapped(trace);

  ASSERT_EQ(sink.agents.size(), 3u);
  EXPECT_EQ(sink.agents[0].id, 0);
  EXPECT_EQ(sink.agents[1].id, 1);
  EXPECT_EQ(sink.agents[2].id, 2);
  ASSERT_EQ(sink.queues.size(), 3u);
  EXPECT_EQ(sink.queues[2].name, "Device 2");
  EXPECT_EQ(sink.queues[2].id, 3);
  EXPECT_EQ(sink.queues[2].pid, pid);
  ASSERT_EQ(sink.code_objects.size(), 3u);
  EXPECT_EQ(sink.code_objects[1].id, 2);
  EXPECT_EQ(sink.code_objects[1].agent_id, 1);
  EXPECT_EQ(sink.code_objects[1].uri, "cuda://device/1");
  EXPECT_EQ(sink.code_objects[1].storage_type, "MEMORY");
  ASSERT_EQ(sink.symbols.size(), 2u); // one per (device, name)
  EXPECT_EQ(sink.symbols[1].code_object_id, 3);
  EXPECT_EQ(sink.dispatches[2].kernel_id, 1);
  EXPECT_EQ(sink.dispatches[1].kernel_id, 2);
  EXPECT_EQ(sink.dispatches[1].queue_id, 3);
}

TEST(stages_cupti_mapping, gives_a_stream_id_seen_in_two_contexts_a_fresh_id) {
  cupti_trace trace = base_trace();
  trace.kernels.push_back(kernel("k", 0, 2000, 2100)); // context 1, stream 7
  trace.kernels.push_back(kernel("k", 1, 2200, 2300)); // context 2, stream 7
  kernel_record default_stream = kernel("k", 0, 2400, 2500);
  default_stream.stream_id = 0; // collides with rocprofv3's "Default Stream" 0
  trace.kernels.push_back(default_stream);
  trace.kernels.push_back(kernel("k", 0, 2600, 2700)); // context 1, stream 7 again
  const recording_sink sink = mapped(trace);

  ASSERT_EQ(sink.streams.size(), 3u);
  EXPECT_EQ(sink.streams[0].id, 7);
  EXPECT_EQ(sink.streams[0].name, "Stream 7");
  EXPECT_EQ(sink.streams[1].id, 1ll << 40);
  EXPECT_EQ(sink.streams[1].name, "Stream 7");
  EXPECT_EQ(sink.streams[2].id, (1ll << 40) + 1);
  EXPECT_EQ(sink.streams[2].name, "Stream 0");
  EXPECT_EQ(sink.dispatches[1].stream_id, 1ll << 40);
  EXPECT_EQ(sink.dispatches[3].stream_id, 7);
}

TEST(stages_cupti_mapping, maps_copies_with_a_host_agent_only_when_memory_is_on_the_host) {
  cupti_trace trace = base_trace();
  memcpy_record peer;
  peer.copy_kind = memcpy_kind::peer_to_peer;
  peer.src_kind = peer.dst_kind = memory_kind::device;
  peer.peer = true;
  peer.device_id = 0;
  peer.src_device_id = 0;
  peer.dst_device_id = 1;
  peer.context_id = 1;
  peer.stream_id = 3;
  peer.start_ns = 2000;
  peer.end_ns = 2400;
  peer.bytes = 1 << 20;
  peer.correlation_id = 21;
  trace.copies.push_back(peer);
  EXPECT_EQ(mapped(trace).agents.size(), 2u); // devices 0 and 1, no CPU agent

  memcpy_record upload;
  upload.copy_kind = memcpy_kind::host_to_device;
  upload.src_kind = memory_kind::pageable;
  upload.dst_kind = memory_kind::device;
  upload.device_id = 1;
  upload.context_id = 2;
  upload.start_ns = 3000;
  upload.end_ns = 3000;
  upload.bytes = 4096;
  upload.async = true;
  upload.correlation_id = 22;
  trace.copies.push_back(upload);
  trace.apis.push_back(api(2, 22, 5002, 2900));
  const recording_sink sink = mapped(trace);

  ASSERT_EQ(sink.agents.size(), 3u);
  const rocpd::agent_info& cpu = sink.agents[2];
  EXPECT_EQ(cpu.id, 2); // one past the largest ordinal
  EXPECT_EQ(cpu.type, "CPU");
  EXPECT_EQ(cpu.name, "host");
  ASSERT_EQ(sink.copies.size(), 2u);
  const auto& [peer_event, peer_copy] = sink.copies[0];
  EXPECT_EQ(peer_copy.name, "MEMORY_COPY_DEVICE_TO_DEVICE");
  EXPECT_EQ(peer_copy.src_agent_id, 0);
  EXPECT_EQ(peer_copy.dst_agent_id, 1);
  EXPECT_EQ(peer_copy.size_bytes, 1 << 20);
  EXPECT_EQ(peer_copy.stream_id, 3);
  EXPECT_EQ(peer_copy.tid, pid);
  EXPECT_EQ(peer_event.category, "MEMORY_COPY");
  EXPECT_EQ(peer_event.stack_id, 21);
  EXPECT_EQ(peer_event.parent_stack_id, 21);
  EXPECT_EQ(json::parse(peer_event.extdata)["dst_device"], 1);
  const auto& [upload_event, upload_copy] = sink.copies[1];
  EXPECT_EQ(upload_copy.name, "MEMORY_COPY_HOST_TO_DEVICE");
  EXPECT_EQ(upload_copy.src_agent_id, 2); // the CPU agent
  EXPECT_EQ(upload_copy.dst_agent_id, 1);
  EXPECT_EQ(upload_copy.start_ns, upload_copy.end_ns);
  EXPECT_EQ(upload_copy.tid, 5002);
  EXPECT_EQ(upload_copy.correlation_id, 22);
  const json ext = json::parse(upload_event.extdata);
  EXPECT_EQ(ext["src_kind"], "PAGEABLE");
  EXPECT_EQ(ext["dst_kind"], "DEVICE");
  EXPECT_EQ(ext["async"], true);
  EXPECT_EQ(ext["api"], "cudaMemcpy");
  EXPECT_FALSE(ext.contains("src_device"));
}

TEST(stages_cupti_mapping, names_copies_of_unknown_kinds_unknown) {
  cupti_trace trace = base_trace();
  memcpy_record odd;
  odd.copy_kind = 42;
  odd.src_kind = 99;
  odd.dst_kind = memory_kind::device;
  trace.copies.push_back(odd);
  const recording_sink sink = mapped(trace);
  ASSERT_EQ(sink.copies.size(), 1u);
  EXPECT_EQ(sink.copies[0].second.name, "MEMORY_COPY_UNKNOWN");
  const json ext = json::parse(sink.copies[0].first.extdata);
  EXPECT_EQ(ext["copy_kind"], 42);
  EXPECT_EQ(ext["src_kind"], "UNKNOWN");
  EXPECT_EQ(sink.agents.size(), 1u); // unknown memory is not host memory
}

TEST(stages_cupti_mapping, memsets_become_regions_with_ids_above_every_correlation_id) {
  cupti_trace trace = base_trace();
  trace.apis.push_back(api(1, 30, 5001, 1500));
  memset_record ms;
  ms.device_id = 1;
  ms.context_id = 2;
  ms.stream_id = 4;
  ms.correlation_id = 30; // the API region already holds id 30
  ms.bytes = 256;
  ms.value = 7;
  ms.memory_kind = memory_kind::device;
  ms.start_ns = 2000;
  ms.end_ns = 2010;
  trace.memsets.push_back(ms);
  const recording_sink sink = mapped(trace);
  const rocpd::region_info& r = sink.region_named("MEMORY_SET");
  EXPECT_EQ(r.id, 31);
  EXPECT_EQ(r.category, "CUDA_MEMSET");
  EXPECT_EQ(r.correlation_id, 30);
  EXPECT_EQ(r.tid, 5001);
  EXPECT_EQ(r.start_ns, 2000);
  EXPECT_EQ(r.end_ns, 2010);
  EXPECT_EQ(json::parse(r.event_extdata), json({{"device", 1},
                                                {"context", 2},
                                                {"cuda_stream", 4},
                                                {"stream_id", 4},
                                                {"bytes", 256},
                                                {"value", 7},
                                                {"memory_kind", "DEVICE"},
                                                {"gpu_timestamps", true}}));
}

TEST(stages_cupti_mapping, synchronizations_keep_only_meaningful_stream_and_event_ids) {
  cupti_trace trace = base_trace();
  trace.context_device[1] = 0;
  synchronization_record stream_sync;
  stream_sync.type = synchronization_type::stream_synchronize;
  stream_sync.context_id = 1;
  stream_sync.stream_id = 5;
  stream_sync.cuda_event_id = ~0u;
  stream_sync.cuda_event_sync_id = 0xffffffffull;
  stream_sync.correlation_id = 40;
  trace.syncs.push_back(stream_sync);
  synchronization_record future;
  future.type = 9;        // a type CUPTI may add later
  future.context_id = 77; // a context nobody described
  future.stream_id = ~0u;
  future.cuda_event_id = 3;
  future.cuda_event_sync_id = 12;
  trace.syncs.push_back(future);
  const recording_sink sink = mapped(trace);

  ASSERT_EQ(sink.regions.size(), 2u);
  const rocpd::region_info& first = sink.regions[0];
  EXPECT_EQ(first.name, "cudaStreamSynchronize");
  EXPECT_EQ(first.category, "CUDA_SYNCHRONIZATION");
  EXPECT_EQ(first.id, 41);
  EXPECT_EQ(json::parse(first.event_extdata), json({{"type", 3},
                                                    {"context", 1},
                                                    {"return_value", 0},
                                                    {"device", 0},
                                                    {"cuda_stream", 5},
                                                    {"stream_id", 5}}));
  const rocpd::region_info& second = sink.regions[1];
  EXPECT_EQ(second.name, "CUDA_SYNCHRONIZATION_9");
  EXPECT_EQ(second.id, 42);
  EXPECT_EQ(json::parse(second.event_extdata), json({{"type", 9},
                                                     {"context", 77},
                                                     {"return_value", 0},
                                                     {"event_id", 3},
                                                     {"event_sync_id", 12}}));
}

TEST(stages_cupti_mapping, event_records_become_regions_timed_by_their_call) {
  cupti_trace trace = base_trace();
  trace.context_device[1] = 0;
  trace.apis.push_back(api(1, 50, 5001, 1500)); // the cudaEventRecord call (cbid 1 is kept)
  cuda_event_record timed;
  timed.correlation_id = 50;
  timed.context_id = 1;
  timed.stream_id = 13;
  timed.event_id = 4;
  timed.event_sync_id = 9;
  timed.device_ns = 2600;
  timed.device_id = 0;
  trace.event_records.push_back(timed);
  cuda_event_record bare; // no call recorded, no device time, no instance
  bare.correlation_id = 51;
  bare.context_id = 1;
  bare.stream_id = 14;
  bare.event_id = 5;
  bare.event_sync_id = 0xffffffffull;
  trace.event_records.push_back(bare);
  const recording_sink sink = mapped(trace);

  std::vector<const rocpd::region_info*> records;
  for (const auto& r : sink.regions)
    if (r.category == "CUDA_EVENT")
      records.push_back(&r);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]->name, "cudaEventRecord");
  EXPECT_EQ(records[0]->start_ns, 1500); // the call's span
  EXPECT_EQ(records[0]->end_ns, 1550);
  EXPECT_EQ(records[0]->tid, 5001);
  const json first = json::parse(records[0]->event_extdata);
  EXPECT_EQ(first["stream_id"], 13);
  EXPECT_EQ(first["event_id"], 4);
  EXPECT_EQ(first["event_sync_id"], 9);
  EXPECT_EQ(first["device_timestamp"], 2600);
  EXPECT_EQ(first["device"], 0);
  const json second = json::parse(records[1]->event_extdata);
  EXPECT_EQ(records[1]->start_ns, 0);
  EXPECT_FALSE(second.contains("event_sync_id"));
  EXPECT_FALSE(second.contains("device_timestamp"));
  EXPECT_EQ(second["stream_id"], 14);
}

TEST(stages_cupti_mapping, drops_driver_calls_inside_runtime_calls_and_names_unknown_cbids) {
  cupti_trace trace = base_trace();
  trace.apis.push_back(api(1, 50, 5001, 3000, true)); // cuLaunchKernel inside cudaLaunchKernel
  trace.apis.push_back(api(1, 50, 5001, 2990));       // cudaLaunchKernel
  trace.apis.push_back(api(1, 51, 5001, 4000, true)); // a driver launch of its own
  trace.apis.push_back(api(900, 52, 5001, 5000));     // a cbid the name table does not know
  trace.apis.push_back(api(0, 53, 5001, 6000, true)); // a cbid without a name
  const recording_sink sink = mapped(trace);

  ASSERT_EQ(sink.regions.size(), 4u);
  EXPECT_EQ(sink.regions[0].id, 50);
  EXPECT_EQ(sink.regions[0].category, "CUDA_RUNTIME_API");
  EXPECT_EQ(sink.regions[1].name, "cbid_900");
  EXPECT_EQ(sink.regions[1].category, "CUDA_RUNTIME_API");
  EXPECT_EQ(sink.regions[2].id, 51);
  EXPECT_EQ(sink.regions[2].name, "cuLaunchKernel");
  EXPECT_EQ(sink.regions[2].category, "CUDA_DRIVER_API");
  EXPECT_EQ(sink.regions[3].name, "cbid_0");
  EXPECT_EQ(json::parse(sink.regions[2].event_extdata), json({{"cbid", 1}, {"return_value", 0}}));
}

TEST(stages_cupti_mapping, writes_node_process_and_one_thread_per_api_caller) {
  cupti_trace trace = base_trace();
  trace.host.machine_id = "";
  trace.host.uname = uname_facts{"Linux", "6.8.0", "#1 SMP", "x86_64"};
  trace.host.command = "./app --size 1\x01";
  trace.host.environment = {{"HOME", "/root"}};
  trace.host.thread_names = {{pid, "app"}, {5001, "worker\xff"}};
  trace.host.cupti_version = 130001;
  trace.host.cuda_driver_version = 13000;
  trace.counts.dropped = 3;
  trace.counts.incomplete = 2;
  trace.apis.push_back(api(1, 1, 5001, 2000));
  trace.apis.push_back(api(1, 2, 5001, 500)); // before tracing started: widens the span
  trace.apis.push_back(api(1, 3, pid, 8000));
  const recording_sink sink = mapped(trace);

  ASSERT_EQ(sink.nodes.size(), 1u);
  EXPECT_EQ(sink.nodes[0].hostname, "gpuhost");
  EXPECT_EQ(sink.nodes[0].machine_id, "gpuhost"); // no machine id: the hostname stands in
  EXPECT_EQ(sink.nodes[0].release, "6.8.0");
  ASSERT_EQ(sink.processes.size(), 1u);
  const rocpd::process_info& p = sink.processes[0];
  EXPECT_EQ(p.pid, pid);
  EXPECT_EQ(p.ppid, 1);
  EXPECT_EQ(p.start_ns, 1000);
  EXPECT_EQ(p.init_ns, 1000);
  EXPECT_EQ(p.end_ns, 9000);
  EXPECT_EQ(p.fini_ns, 9000);
  EXPECT_EQ(p.command, "./app --size 1?");
  EXPECT_EQ(p.environment, json({{"HOME", "/root"}}));
  EXPECT_EQ(p.extdata["dropped_records"], 3);
  EXPECT_EQ(p.extdata["incomplete_records"], 2);
  EXPECT_EQ(p.extdata["cupti_api_version"], 130001);
  EXPECT_EQ(p.extdata["cuda_driver_version"], 13000);
  EXPECT_EQ(p.extdata["tracer"], "rpl_cupti_tracer");
  ASSERT_EQ(sink.threads.size(), 2u);
  EXPECT_EQ(sink.threads[0].tid, pid);
  EXPECT_EQ(sink.threads[0].name, "app");
  EXPECT_EQ(sink.threads[0].start_ns, 1000);
  EXPECT_EQ(sink.threads[0].end_ns, 9000);
  EXPECT_EQ(sink.threads[1].tid, 5001);
  EXPECT_EQ(sink.threads[1].name, "worker?");
  EXPECT_EQ(sink.threads[1].start_ns, 500);
  EXPECT_EQ(sink.threads[1].end_ns, 2050);
  EXPECT_EQ(thread_ids(trace), (std::set<std::int64_t>{pid, 5001}));
}

TEST(stages_cupti_mapping, an_empty_trace_has_a_process_but_no_agents) {
  const recording_sink sink = mapped(base_trace());
  EXPECT_EQ(sink.nodes.size(), 1u);
  EXPECT_EQ(sink.processes.size(), 1u);
  EXPECT_EQ(sink.threads.size(), 1u);
  EXPECT_TRUE(sink.agents.empty());
  EXPECT_TRUE(sink.queues.empty());
  EXPECT_TRUE(sink.streams.empty());
  EXPECT_TRUE(sink.dispatches.empty());
  EXPECT_TRUE(sink.regions.empty());
}

TEST(stages_cupti_mapping, lists_devices_of_kernels_peer_copies_memsets_and_contexts) {
  cupti_trace trace = base_trace();
  trace.kernels.push_back(kernel("k", 4, 2000, 2100));
  memcpy_record peer;
  peer.peer = true;
  peer.device_id = 0;
  peer.src_device_id = 0;
  peer.dst_device_id = 6;
  trace.copies.push_back(peer);
  memset_record ms;
  ms.device_id = 2;
  trace.memsets.push_back(ms);
  trace.context_device[8] = 5;
  synchronization_record sync; // synchronizations name no device
  sync.context_id = 99;
  trace.syncs.push_back(sync);
  EXPECT_EQ(devices_used(trace), (std::set<std::uint32_t>{0, 2, 4, 5, 6}));
}

TEST(stages_cupti_mapping, ends_the_process_at_the_clock_or_at_its_last_activity) {
  cupti_trace trace = base_trace(); // starts at 1000
  trace.kernels.push_back(kernel("k", 0, 2000, 7000));
  trace.apis.push_back(api(1, 1, pid, 7500)); // ends at 7550
  EXPECT_EQ(process_end_ns(trace, 8000), 8000u);
  EXPECT_EQ(process_end_ns(trace, 0), 7550u);        // the clock was unreadable
  EXPECT_EQ(process_end_ns(base_trace(), 0), 1000u); // never before the start
  EXPECT_EQ(process_end_ns(trace, 500), 1000u);
}

TEST(stages_cupti_mapping, writer_sink_writes_a_database_the_reader_accepts) {
  rpl::testing::temp_dir dir;
  cupti_trace trace = base_trace();
  driver_device h100;
  h100.available = true;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.compute_capability_major = 9;
  h100.compute_capability_minor = 0;
  trace.driver_devices[0] = h100;
  kernel_record k = kernel("_Z6kernelPfi", 0, 2000, 2600, 11);
  k.registers_per_thread = 72;
  trace.kernels.push_back(k);
  trace.kernels.push_back(kernel("_Z6kernelPfi", 0, 3000, 3500, 12));
  trace.apis.push_back(api(1, 11, pid, 1900));
  memcpy_record upload;
  upload.copy_kind = memcpy_kind::host_to_device;
  upload.src_kind = memory_kind::pinned;
  upload.dst_kind = memory_kind::device;
  upload.start_ns = 1800;
  upload.end_ns = 1850;
  trace.copies.push_back(upload);
  {
    rocpd::writer writer(dir / "4242_results.db");
    writer_sink sink(writer);
    map_trace(trace, sink);
    writer.commit();
  }
  const rocpd::reader reader = rocpd::reader::open({dir / "4242_results.db"});
  EXPECT_EQ(reader.dispatch_count(), 2u);
  const std::vector<rocpd::agent_row> agents = reader.agents();
  ASSERT_EQ(agents.size(), 2u);
  EXPECT_EQ(agents[0].name, "sm_90");
  EXPECT_EQ(agents[0].model_name, "H100");
  EXPECT_EQ(agents[1].type, "CPU");
  const std::vector<rocpd::kernel_symbol_row> symbols = reader.kernel_symbols();
  ASSERT_EQ(symbols.size(), 1u);
  EXPECT_EQ(symbols[0].arch_vgpr_count, 72);
  EXPECT_EQ(symbols[0].display_name, "kernel(float*, int)");
  std::vector<std::tuple<std::int64_t, std::int64_t, std::string>> rows;
  reader.for_each_dispatch([&](const rocpd::dispatch_row& row) {
    rows.emplace_back(row.start_ns, row.queue_id, std::string(row.kernel_name));
  });
  EXPECT_EQ(rows, (std::vector<std::tuple<std::int64_t, std::int64_t, std::string>>{
                      {2000, 1, "kernel(float*, int)"}, {3000, 1, "kernel(float*, int)"}}));
  rpl::testing::sqlite_db db(dir / "4242_results.db");
  EXPECT_EQ(
      db.scalar("SELECT S.string FROM rocpd_memory_copy M JOIN rocpd_string S ON S.id = M.name_id"),
      "MEMORY_COPY_HOST_TO_DEVICE");
}

} // namespace
} // namespace rpl::stages::cupti
