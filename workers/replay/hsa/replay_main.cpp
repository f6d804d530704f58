// rpl-replay-hsa: replays one HSA capture (workers/capture/hsa/) at its original addresses, the
// specification's §8.3 model: every region's range reserved with hsa_amd_vmem_address_reserve at
// its address (page aligned), backed by hsa_amd_vmem_handle_create from the GPU's coarse-grained
// pool, mapped and made accessible; the replay aborts if a returned base differs or any step fails.
// Memory is rebuilt before the code object is loaded. Then: the captured kernarg segment in a
// kernarg-pool buffer, the captured AQL packet with this process's kernel object, kernarg address
// and completion signal, one dispatch verified against the captured after-state (as the CUDA
// replay: bit-exact or float32 within a tolerance), then warm-up and timed dispatches, each timed
// from the packet's profiling timestamps (hsa_amd_profiling_get_dispatch_time), the written
// regions restored before each.
//
// Same arguments, JSON and exit codes as rpl-replay-cuda (workers/replay/cuda/replay_main.cpp),
// without --relocate. Built only against HSA headers that declare the virtual-memory API (ROCm 6.0
// and later); compiled here against ROCR-Runtime's headers (see workers/replay/README.md). No AMD
// GPU has ever run it.

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <nlohmann/json.hpp>

#include "stages/capture/aql_dispatch.hpp"
#include "stages/capture/output_compare.hpp"
#include "stages/capture/va_ranges.hpp"
#include "stages/statistics/statistics.hpp"
#include "workers/capture/capture_directory.hpp"

namespace {

namespace sc = rpl::stages::capture;
namespace cap = rpl::workers::capture;

struct replay_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct bad_input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(hsa_status_t status, const std::string& what) {
  if (status != HSA_STATUS_SUCCESS && status != HSA_STATUS_INFO_BREAK) {
    const char* text = nullptr;
    hsa_status_string(status, &text);
    throw replay_failed(what + ": " + (text != nullptr ? text : std::to_string(status)));
  }
}

struct options {
  std::string dir;
  int iterations = 20;
  int warmup = 3;
  std::optional<sc::float_tolerance> tolerance;
  std::string json_out;
};

options parse(int argc, char** argv) {
  options o;
  auto value = [&](int& i, const char* flag) -> std::string {
    if (i + 1 >= argc) {
      throw bad_input(std::string(flag) + " needs a value");
    }
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iterations") {
      o.iterations = std::stoi(value(i, "--iterations"));
    } else if (a == "--warmup") {
      o.warmup = std::stoi(value(i, "--warmup"));
    } else if (a == "--tolerance-abs") {
      o.tolerance = o.tolerance.value_or(sc::float_tolerance{});
      o.tolerance->abs = std::stod(value(i, "--tolerance-abs"));
    } else if (a == "--tolerance-rel") {
      o.tolerance = o.tolerance.value_or(sc::float_tolerance{});
      o.tolerance->rel = std::stod(value(i, "--tolerance-rel"));
    } else if (a == "--json-out") {
      o.json_out = value(i, "--json-out");
    } else if (a == "--relocate") {
      throw bad_input("--relocate is not implemented for HSA captures");
    } else if (o.dir.empty() && !a.empty() && a[0] != '-') {
      o.dir = a;
    } else {
      throw bad_input("unknown argument '" + a + "'");
    }
  }
  if (o.dir.empty() || o.iterations < 1 || o.warmup < 0) {
    throw bad_input("usage: rpl-replay-hsa DIR [--iterations N>=1] [--warmup W>=0]");
  }
  return o;
}

struct device {
  hsa_agent_t gpu{};
  hsa_agent_t cpu{};
  hsa_amd_memory_pool_t coarse{};
  hsa_amd_memory_pool_t kernarg{};
  bool has_gpu = false;
  bool has_coarse = false;
  bool has_kernarg = false;
};

/// The GPU agent named `arch` (e.g. gfx942), its coarse-grained global pool, and a kernarg pool.
device find_device(const std::string& arch) {
  struct search {
    std::string arch;
    device d;
  } s{arch, {}};
  check(hsa_iterate_agents(
            [](hsa_agent_t agent, void* data) {
              auto* s = static_cast<search*>(data);
              hsa_device_type_t type{};
              hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
              char name[64] = {0};
              hsa_agent_get_info(agent, HSA_AGENT_INFO_NAME, name);
              if (type == HSA_DEVICE_TYPE_CPU && s->d.cpu.handle == 0) {
                s->d.cpu = agent;
              }
              if (type == HSA_DEVICE_TYPE_GPU && !s->d.has_gpu && s->arch == name) {
                s->d.gpu = agent;
                s->d.has_gpu = true;
              }
              return HSA_STATUS_SUCCESS;
            },
            &s),
        "hsa_iterate_agents");
  if (!s.d.has_gpu) {
    throw bad_input("no " + arch + " GPU here (the capture's architecture); fix: replay on one");
  }
  auto pools = [](hsa_agent_t agent, device& d, bool kernarg) {
    struct ctx {
      device* d;
      bool kernarg;
    } c{&d, kernarg};
    hsa_amd_agent_iterate_memory_pools(
        agent,
        [](hsa_amd_memory_pool_t pool, void* data) {
          auto* c = static_cast<ctx*>(data);
          hsa_amd_segment_t segment{};
          hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment);
          if (segment != HSA_AMD_SEGMENT_GLOBAL) {
            return HSA_STATUS_SUCCESS;
          }
          std::uint32_t flags = 0;
          hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
          if (!c->kernarg && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) != 0 &&
              !c->d->has_coarse) {
            c->d->coarse = pool;
            c->d->has_coarse = true;
          }
          if (c->kernarg && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) != 0 &&
              !c->d->has_kernarg) {
            c->d->kernarg = pool;
            c->d->has_kernarg = true;
          }
          return HSA_STATUS_SUCCESS;
        },
        &c);
  };
  pools(s.d.gpu, s.d, false);
  pools(s.d.cpu, s.d, true);
  if (!s.d.has_coarse || !s.d.has_kernarg) {
    throw replay_failed("the " + arch + " GPU has no coarse-grained pool or no kernarg pool");
  }
  return s.d;
}

void emit(const options& o, const nlohmann::json& doc) {
  const std::string text = doc.dump(2) + "\n";
  if (o.json_out.empty()) {
    std::fputs(text.c_str(), stdout);
    return;
  }
  const std::filesystem::path path(o.json_out);
  cap::write_text(path.parent_path(), path.filename().string(), text);
}

int run(const options& o) {
  cap::capture_directory c;
  try {
    c = cap::load_capture(o.dir);
  } catch (const sc::capture_error& error) {
    throw bad_input(error.what());
  }
  if (c.dispatch.backend != "hsa") {
    throw bad_input(o.dir + ": a " + c.dispatch.backend +
                    " capture; rpl-replay-hsa replays HSA ones");
  }
  const auto packet_bytes = cap::read_bytes(c.dir, "packet.bin", 64);
  auto packet = sc::decode_aql_dispatch(packet_bytes);
  check(hsa_init(), "hsa_init");
  const device d = find_device(c.dispatch.arch);
  std::size_t granule = 0;
  check(hsa_amd_memory_pool_get_info(d.coarse, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE,
                                     &granule),
        "the pool's allocation granule");
  // 1. Memory at its addresses, before the code object is loaded.
  const auto ranges = sc::reservation_ranges(c.regions, std::max<std::uint64_t>(granule, 4096));
  for (const auto& r : ranges) {
    void* va = nullptr;
    check(hsa_amd_vmem_address_reserve(&va, r.size, r.base, 0),
          "hsa_amd_vmem_address_reserve at " + sc::hex_address(r.base));
    if (reinterpret_cast<std::uint64_t>(va) != r.base) {
      throw replay_failed("could not reserve [" + sc::hex_address(r.base) + ", +" +
                          std::to_string(r.size) + ") at its original address: the runtime gave " +
                          sc::hex_address(reinterpret_cast<std::uint64_t>(va)) +
                          "; nothing was replayed");
    }
    hsa_amd_vmem_alloc_handle_t handle{};
    check(hsa_amd_vmem_handle_create(d.coarse, r.size, MEMORY_TYPE_NONE, 0, &handle),
          "hsa_amd_vmem_handle_create");
    check(hsa_amd_vmem_map(va, r.size, 0, handle, 0), "hsa_amd_vmem_map");
    const hsa_amd_memory_access_desc_t access[] = {{HSA_ACCESS_PERMISSION_RW, d.gpu},
                                                   {HSA_ACCESS_PERMISSION_RW, d.cpu}};
    check(hsa_amd_vmem_set_access(va, r.size, access, 2), "hsa_amd_vmem_set_access");
  }
  std::vector<std::vector<std::uint8_t>> before(c.regions.size());
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    before[i] = cap::read_bytes(c.dir, c.regions[i].file, c.regions[i].size);
    check(hsa_memory_copy(reinterpret_cast<void*>(c.regions[i].base), before[i].data(),
                          before[i].size()),
          "restoring region " + sc::hex_address(c.regions[i].base));
  }
  // 2. The code object, the kernarg segment, the queue.
  hsa_code_object_reader_t reader{};
  check(hsa_code_object_reader_create_from_memory(c.code_object.data(), c.code_object.size(),
                                                  &reader),
        "reading " + c.dispatch.code_object_file);
  hsa_executable_t executable{};
  check(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                  nullptr, &executable),
        "hsa_executable_create_alt");
  check(hsa_executable_load_agent_code_object(executable, d.gpu, reader, nullptr, nullptr),
        "loading " + c.dispatch.code_object_file);
  check(hsa_executable_freeze(executable, nullptr), "hsa_executable_freeze");
  hsa_executable_symbol_t symbol{};
  check(hsa_executable_get_symbol_by_name(executable, (c.dispatch.kernel + ".kd").c_str(), &d.gpu,
                                          &symbol),
        "the kernel " + c.dispatch.kernel);
  check(hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                       &packet.kernel_object),
        "its kernel object");
  void* kernarg = nullptr;
  check(hsa_amd_memory_pool_allocate(d.kernarg, std::max<std::size_t>(c.kernarg.size(), 16), 0,
                                     &kernarg),
        "a kernarg buffer");
  check(hsa_amd_agents_allow_access(1, &d.gpu, nullptr, kernarg), "kernarg access");
  std::memcpy(kernarg, c.kernarg.data(), c.kernarg.size());
  packet.kernarg_address = reinterpret_cast<std::uint64_t>(kernarg);
  hsa_queue_t* queue = nullptr;
  check(hsa_queue_create(d.gpu, 64, HSA_QUEUE_TYPE_SINGLE, nullptr, nullptr, UINT32_MAX, UINT32_MAX,
                         &queue),
        "hsa_queue_create");
  check(hsa_amd_profiling_set_profiler_enabled(queue, 1), "profiling");
  hsa_signal_t done{};
  check(hsa_signal_create(1, 0, nullptr, &done), "hsa_signal_create");
  packet.completion_signal = done.handle;
  // One dispatch: the packet written with its header last, the doorbell rung, the signal awaited.
  auto dispatch = [&]() -> std::int64_t {
    hsa_signal_store_relaxed(done, 1);
    const std::uint64_t index = hsa_queue_add_write_index_relaxed(queue, 1);
    auto* slot = static_cast<std::uint8_t*>(queue->base_address) + 64 * (index % queue->size);
    const auto bytes = sc::encode_aql_dispatch(packet);
    std::memcpy(slot + 2, bytes.data() + 2, 62);
    const std::uint32_t header_setup = static_cast<std::uint32_t>(packet.header) |
                                       (static_cast<std::uint32_t>(packet.setup) << 16);
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(slot), header_setup, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue->doorbell_signal, static_cast<hsa_signal_value_t>(index));
    hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX, HSA_WAIT_STATE_BLOCKED);
    hsa_amd_profiling_dispatch_time_t time{};
    check(hsa_amd_profiling_get_dispatch_time(d.gpu, done, &time), "the dispatch's timestamps");
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    hsa_amd_profiling_convert_tick_to_system_domain(d.gpu, time.start, &start);
    hsa_amd_profiling_convert_tick_to_system_domain(d.gpu, time.end, &end);
    std::uint64_t frequency = 1;
    hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &frequency);
    return static_cast<std::int64_t>(static_cast<double>(end - start) * 1e9 /
                                     static_cast<double>(frequency));
  };
  // 3. Verify.
  dispatch();
  nlohmann::json mismatches = nlohmann::json::array();
  std::vector<std::size_t> written;
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    const auto& r = c.regions[i];
    std::vector<std::uint8_t> now(r.size);
    check(hsa_memory_copy(now.data(), reinterpret_cast<void*>(r.base), r.size),
          "reading region " + sc::hex_address(r.base));
    const auto expected =
        r.after_file.empty() ? before[i] : cap::read_bytes(c.dir, r.after_file, r.size);
    if (!r.after_file.empty()) {
      written.push_back(i);
    }
    const auto result = sc::compare_output(expected, now, o.tolerance);
    if (!result.equal()) {
      mismatches.push_back({{"base", sc::hex_address(r.base)},
                            {"size", r.size},
                            {"written_by_capture", !r.after_file.empty()},
                            {"mismatched", result.mismatched},
                            {"first_offset", result.first_mismatch_offset}});
    }
  }
  char device_name[64] = {0};
  hsa_agent_get_info(d.gpu, HSA_AGENT_INFO_NAME, device_name);
  nlohmann::json out = {{"kernel", c.dispatch.kernel},
                        {"capture", o.dir},
                        {"device", {{"name", device_name}, {"arch", c.dispatch.arch}}},
                        {"addresses", "original"},
                        {"placement", "hsa virtual memory reservation"},
                        {"granularity", granule},
                        {"regions", c.regions.size()},
                        {"reserved_ranges", ranges.size()},
                        {"verification",
                         {{"mode", sc::describe(o.tolerance)},
                          {"passed", mismatches.empty()},
                          {"regions_compared", c.regions.size()},
                          {"regions_written", written.size()},
                          {"mismatched_regions", mismatches}}},
                        {"timing", nullptr}};
  if (!mismatches.empty()) {
    emit(o, out);
    return 3;
  }
  // 4. Time, the written regions restored before each dispatch (outside its timestamps).
  std::vector<std::int64_t> samples;
  for (int i = 0; i < o.warmup + o.iterations; ++i) {
    for (const auto w : written) {
      check(hsa_memory_copy(reinterpret_cast<void*>(c.regions[w].base), before[w].data(),
                            before[w].size()),
            "restoring inputs");
    }
    const auto ns = dispatch();
    if (i >= o.warmup) {
      samples.push_back(ns);
    }
  }
  const auto stats = rpl::stages::summarize(samples);
  out["timing"] = {{"warmup", o.warmup},
                   {"iterations", o.iterations},
                   {"restored_regions", written.size()},
                   {"median_ns", stats.median},
                   {"mean_ns", stats.mean},
                   {"stddev_ns", stats.stddev},
                   {"cv", stats.cv},
                   {"min_ns", stats.min},
                   {"max_ns", stats.max},
                   {"stability", rpl::stages::to_string(stats.stability)},
                   {"samples_ns", samples}};
  emit(o, out);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const bad_input& error) {
    std::fprintf(stderr, "rpl-replay-hsa: %s\n", error.what());
    return 2;
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "rpl-replay-hsa: a number was expected (%s)\n", error.what());
    return 2;
  } catch (const sc::capture_error& error) {
    std::fprintf(stderr, "rpl-replay-hsa: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rpl-replay-hsa: %s\n", error.what());
    return 1;
  }
}
