// The HSA capture library (workers/capture/hsa/hsa_capture_tool.cpp) without an AMD GPU: the test
// loads librpl_hsa_capture.so, hands its OnLoad an HSA API table whose functions are stand-ins
// (host memory for device memory, a queue whose packets come to the test), and plays a program:
// load a real code object (hipcc, gfx90a), allocate an input and an output, create a queue and
// submit a recorded kernel dispatch packet; the "GPU" (the packet writer) doubles the input into
// the output when the dispatch packet is written. The capture folder must hold the manifest from
// the packet and the metadata, the kernarg segment, both regions before, the output after, and the
// packets must have gone out as barrier, dispatch, barrier. Skips without HSA headers, the library
// or hipcc.
#if __has_include(<hsa/hsa_api_trace.h>)
#define AMD_INTERNAL_BUILD
#include <hsa/hsa.h>
#include <hsa/hsa_api_trace.h>
#include <hsa/hsa_ext_amd.h>
#define RPL_HAVE_HSA 1
#endif

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/capture/aql_dispatch.hpp"
#include "support/hip_code_object.hpp"
#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"
#include "workers/process/find_program.hpp"

namespace rpl {
namespace {

#if defined(RPL_HAVE_HSA) && defined(RPL_HSA_CAPTURE_LIB)

constexpr std::uint64_t kernel_object = 0xabc000;
std::string kernel_symbol; // "<mangled>.kd"
std::vector<std::vector<std::uint8_t>> written_packets;
float* input = nullptr;
float* output = nullptr;
std::size_t elements = 0;
hsa_amd_queue_intercept_handler handler = nullptr;
void* handler_data = nullptr;
hsa_queue_t fake_queue{};

hsa_status_t intercept_create(hsa_agent_t,
                              uint32_t,
                              hsa_queue_type32_t,
                              void (*)(hsa_status_t, hsa_queue_t*, void*),
                              void*,
                              uint32_t,
                              uint32_t,
                              hsa_queue_t** queue) {
  *queue = &fake_queue;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t intercept_register(hsa_queue_t*, hsa_amd_queue_intercept_handler h, void* data) {
  handler = h;
  handler_data = data;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t pool_allocate(hsa_amd_memory_pool_t, size_t size, uint32_t, void** ptr) {
  *ptr = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t pool_free(void* ptr) {
  std::free(ptr);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t pointer_info(
    const void*, hsa_amd_pointer_info_t* info, void* (*)(size_t), uint32_t*, hsa_agent_t**) {
  info->type = HSA_EXT_POINTER_TYPE_HSA;
  info->agentOwner = hsa_agent_t{1};
  return HSA_STATUS_SUCCESS;
}
hsa_status_t agent_info(hsa_agent_t, hsa_agent_info_t attribute, void* value) {
  if (attribute == HSA_AGENT_INFO_DEVICE) {
    *static_cast<hsa_device_type_t*>(value) = HSA_DEVICE_TYPE_GPU;
  } else if (attribute == HSA_AGENT_INFO_NAME) {
    std::strcpy(static_cast<char*>(value), "gfx90a");
  }
  return HSA_STATUS_SUCCESS;
}
hsa_status_t memory_copy(void* dst, const void* src, size_t size) {
  std::memcpy(dst, src, size);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t signal_create(hsa_signal_value_t, uint32_t, const hsa_agent_t*, hsa_signal_t* s) {
  s->handle = 1;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t signal_destroy(hsa_signal_t) {
  return HSA_STATUS_SUCCESS;
}
hsa_signal_value_t
signal_wait(hsa_signal_t, hsa_signal_condition_t, hsa_signal_value_t, uint64_t, hsa_wait_state_t) {
  return 0;
}
hsa_status_t reader_create(const void*, size_t, hsa_code_object_reader_t* reader) {
  reader->handle = 77;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t load_code_object(hsa_executable_t,
                              hsa_agent_t,
                              hsa_code_object_reader_t,
                              const char*,
                              hsa_loaded_code_object_t*) {
  return HSA_STATUS_SUCCESS;
}
hsa_status_t iterate_symbols(
    hsa_executable_t executable,
    hsa_agent_t agent,
    hsa_status_t (*callback)(hsa_executable_t, hsa_agent_t, hsa_executable_symbol_t, void*),
    void* data) {
  callback(executable, agent, hsa_executable_symbol_t{5}, data);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t
symbol_info(hsa_executable_symbol_t, hsa_executable_symbol_info_t attribute, void* value) {
  switch (attribute) {
  case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
    *static_cast<hsa_symbol_kind_t*>(value) = HSA_SYMBOL_KIND_KERNEL;
    break;
  case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
    *static_cast<std::uint64_t*>(value) = kernel_object;
    break;
  case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
    *static_cast<std::uint32_t*>(value) = static_cast<std::uint32_t>(kernel_symbol.size());
    break;
  case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
    std::memcpy(value, kernel_symbol.data(), kernel_symbol.size());
    break;
  default: break;
  }
  return HSA_STATUS_SUCCESS;
}
/// The queue: records each packet; a kernel dispatch "runs" (out = 2 * in).
void writer(const void* packets, uint64_t count) {
  const auto* bytes = static_cast<const std::uint8_t*>(packets);
  for (uint64_t i = 0; i < count; ++i) {
    written_packets.emplace_back(bytes + 64 * i, bytes + 64 * (i + 1));
    if (stages::capture::is_kernel_dispatch(written_packets.back())) {
      for (std::size_t k = 0; k < elements; ++k)
        output[k] = 2.0f * input[k];
    }
  }
}

TEST(hsa_capture_tool, captures_a_dispatch_from_an_intercepted_queue) {
  const auto hipcc = workers::find_on_path("hipcc");
  if (!hipcc)
    GTEST_SKIP() << "hipcc is not on PATH (Debian: apt-get install hipcc); skipping";
  rpl::testing::temp_dir dir;
  rpl::testing::write_file(dir / "k.hip", R"hip(
#include <hip/hip_runtime.h>
__global__ void twice(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}
)hip");
  ASSERT_TRUE(rpl::testing::compile_hsaco(dir.path(), std::chrono::minutes(5), hipcc->string())
                  .succeeded());
  const auto image = rpl::testing::read_text(dir / "k.hsaco");
  kernel_symbol = "_Z5twicePKfPfi.kd";

  void* library = dlopen(RPL_HSA_CAPTURE_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  using on_load_fn = bool (*)(HsaApiTable*, uint64_t, uint64_t, const char* const*);
  const auto on_load = reinterpret_cast<on_load_fn>(dlsym(library, "OnLoad"));
  ASSERT_NE(on_load, nullptr);

  CoreApiTable core{};
  AmdExtTable amd{};
  HsaApiTable table{};
  table.core_ = &core;
  table.amd_ext_ = &amd;
  amd.hsa_amd_queue_intercept_create_fn = intercept_create;
  amd.hsa_amd_queue_intercept_register_fn = intercept_register;
  amd.hsa_amd_memory_pool_allocate_fn = pool_allocate;
  amd.hsa_amd_memory_pool_free_fn = pool_free;
  amd.hsa_amd_pointer_info_fn = pointer_info;
  core.hsa_agent_get_info_fn = agent_info;
  core.hsa_memory_copy_fn = memory_copy;
  core.hsa_signal_create_fn = signal_create;
  core.hsa_signal_destroy_fn = signal_destroy;
  core.hsa_signal_wait_scacquire_fn = signal_wait;
  core.hsa_code_object_reader_create_from_memory_fn = reader_create;
  core.hsa_executable_load_agent_code_object_fn = load_code_object;
  core.hsa_executable_iterate_agent_symbols_fn = iterate_symbols;
  core.hsa_executable_symbol_get_info_fn = symbol_info;

  const auto out = dir / "capture";
  ::setenv("RPL_CAPTURE_DIR", out.c_str(), 1);
  ::setenv("RPL_CAPTURE_KERNEL", "twice", 1);
  ::setenv("RPL_CAPTURE_DISPATCH", "1", 1);
  ASSERT_TRUE(on_load(&table, 0, 0, nullptr));
  ASSERT_NE(core.hsa_queue_create_fn, nullptr);

  // The program: load the code object, allocate, create a queue, dispatch twice.
  hsa_code_object_reader_t reader{};
  ASSERT_EQ(core.hsa_code_object_reader_create_from_memory_fn(image.data(), image.size(), &reader),
            HSA_STATUS_SUCCESS);
  hsa_loaded_code_object_t loaded{};
  ASSERT_EQ(core.hsa_executable_load_agent_code_object_fn(hsa_executable_t{9}, hsa_agent_t{1},
                                                          reader, nullptr, &loaded),
            HSA_STATUS_SUCCESS);
  elements = 4096;
  void* in = nullptr;
  void* outp = nullptr;
  amd.hsa_amd_memory_pool_allocate_fn(hsa_amd_memory_pool_t{3}, elements * 4, 0, &in);
  amd.hsa_amd_memory_pool_allocate_fn(hsa_amd_memory_pool_t{3}, elements * 4, 0, &outp);
  input = static_cast<float*>(in);
  output = static_cast<float*>(outp);
  for (std::size_t k = 0; k < elements; ++k) {
    input[k] = static_cast<float>(k);
    output[k] = 0;
  }
  hsa_queue_t* queue = nullptr;
  ASSERT_EQ(core.hsa_queue_create_fn(hsa_agent_t{1}, 1024, HSA_QUEUE_TYPE_MULTI, nullptr, nullptr,
                                     0, 0, &queue),
            HSA_STATUS_SUCCESS);
  ASSERT_NE(handler, nullptr);
  struct {
    const float* in;
    float* out;
    int n;
    int pad;
    std::uint64_t hidden[32];
  } kernarg{input, output, static_cast<int>(elements), 0, {}};
  stages::capture::aql_dispatch packet;
  packet.header = stages::capture::aql_kernel_dispatch_type;
  packet.setup = 1;
  packet.workgroup = {256, 1, 1};
  packet.grid = {static_cast<std::uint32_t>(elements), 1, 1};
  packet.kernel_object = kernel_object;
  packet.kernarg_address = reinterpret_cast<std::uint64_t>(&kernarg);
  const auto bytes = stages::capture::encode_aql_dispatch(packet);
  handler(bytes.data(), 1, 0, handler_data, writer); // dispatch 0: passed through
  for (std::size_t k = 0; k < elements; ++k)
    input[k] = static_cast<float>(k) + 0.5f;         // the input dispatch 1 sees
  handler(bytes.data(), 1, 1, handler_data, writer); // dispatch 1: captured

  // Out went: dispatch 0, then barrier, dispatch 1, barrier.
  ASSERT_EQ(written_packets.size(), 4u);
  EXPECT_TRUE(stages::capture::is_kernel_dispatch(written_packets[0]));
  EXPECT_EQ(written_packets[1][0], HSA_PACKET_TYPE_BARRIER_AND);
  EXPECT_TRUE(stages::capture::is_kernel_dispatch(written_packets[2]));
  EXPECT_EQ(written_packets[3][0], HSA_PACKET_TYPE_BARRIER_AND);

  const auto status = nlohmann::json::parse(rpl::testing::read_text(out / "capture_status.json"));
  ASSERT_EQ(status["status"], "captured") << status.dump();
  const auto manifest = stages::capture::dispatch_from_json(
      nlohmann::json::parse(rpl::testing::read_text(out / "dispatch.json")), "dispatch.json");
  EXPECT_EQ(manifest.backend, "hsa");
  EXPECT_EQ(manifest.kernel, "_Z5twicePKfPfi");
  EXPECT_EQ(manifest.arch, "gfx90a");
  EXPECT_EQ(manifest.dispatch_index, 1u);
  EXPECT_EQ(manifest.grid, (std::array<std::uint32_t, 3>{16, 1, 1}));
  EXPECT_EQ(manifest.block, (std::array<std::uint32_t, 3>{256, 1, 1}));
  ASSERT_GE(manifest.params.size(), 3u);
  const auto regions = stages::capture::regions_from_json(
      nlohmann::json::parse(rpl::testing::read_text(out / "memory_regions.json")), "r.json");
  ASSERT_EQ(regions.size(), 2u);
  const auto& written =
      regions[0].base == reinterpret_cast<std::uint64_t>(output) ? regions[0] : regions[1];
  const auto& read = &written == &regions[0] ? regions[1] : regions[0];
  EXPECT_TRUE(read.after_file.empty());
  ASSERT_FALSE(written.after_file.empty());
  const auto after = rpl::testing::read_text(out / written.after_file);
  ASSERT_EQ(after.size(), elements * 4);
  float sample = 0;
  std::memcpy(&sample, after.data() + 4 * 10, 4);
  EXPECT_EQ(sample, 21.0f); // 2 * (10 + 0.5)
  const auto before_in = rpl::testing::read_text(out / read.file);
  std::memcpy(&sample, before_in.data() + 4 * 10, 4);
  EXPECT_EQ(sample, 10.5f);
  // The kernarg segment holds the two pointers as the program passed them.
  const auto kernarg_bytes = rpl::testing::read_text(out / "kernarg.bin");
  ASSERT_GE(kernarg_bytes.size(), 16u);
  std::uint64_t first = 0;
  std::memcpy(&first, kernarg_bytes.data(), 8);
  EXPECT_EQ(first, reinterpret_cast<std::uint64_t>(input));
  EXPECT_EQ(rpl::testing::read_text(out / "kernel.hsaco"), image);
}

#else

TEST(hsa_capture_tool, captures_a_dispatch_from_an_intercepted_queue) {
  GTEST_SKIP() << "no HSA headers (hsa/hsa_api_trace.h) or no librpl_hsa_capture.so built here";
}

#endif

} // namespace
} // namespace rpl
