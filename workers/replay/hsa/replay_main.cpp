// rpl-replay-hsa: replays one HSA capture (workers/capture/hsa/) at its original addresses, the
// specification's §8.3 model: every region's range reserved with hsa_amd_vmem_address_reserve at
// its address (page aligned), backed by hsa_amd_vmem_handle_create from the GPU's coarse-grained
// pool, mapped and made accessible; the replay aborts if a returned base differs or any step fails.
// Memory is rebuilt (contents restored, and the red zones, the reserved bytes outside every
// region, filled with a pattern: stages/capture/red_zones.hpp) before the code object is loaded.
// Then: the captured kernarg segment in a kernarg-pool buffer, the captured AQL packet with this
// process's kernel object, kernarg address and completion signal, one dispatch verified against
// the captured after-state (as the CUDA replay: bit-exact or float32 within a tolerance) and its
// red zones unchanged, then warm-up and timed dispatches, each timed from the packet's profiling
// timestamps (hsa_amd_profiling_get_dispatch_time), the written regions restored before each, and
// the red zones checked again after them.
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
#include "stages/capture/red_zones.hpp"
#include "stages/capture/va_ranges.hpp"
#include "workers/capture/capture_directory.hpp"
#include "workers/replay/replay_report.hpp"

namespace {

namespace sc = rpl::stages::capture;
namespace cap = rpl::workers::capture;

namespace rp = rpl::workers::replay;
using rp::bad_input;
using rp::replay_failed;

void check(hsa_status_t status, const std::string& what) {
  if (status != HSA_STATUS_SUCCESS && status != HSA_STATUS_INFO_BREAK) {
    const char* text = nullptr;
    hsa_status_string(status, &text);
    throw replay_failed(what + ": " + (text != nullptr ? text : std::to_string(status)));
  }
}

using options = rp::replay_arguments;

options parse(int argc, char** argv) {
  return rp::parse_replay_arguments(
      argc, argv, [](const std::string& flag, const std::function<std::string()>&) -> bool {
        if (flag == "--relocate") {
          throw bad_input("--relocate is not implemented for HSA captures");
        }
        return false;
      });
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
  } state{arch, {}};
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
            &state),
        "hsa_iterate_agents");
  if (!state.d.has_gpu) {
    throw bad_input("no " + arch + " GPU here (the capture's architecture); fix: replay on one");
  }
  auto pools = [](hsa_agent_t agent, device& d, bool kernarg) {
    struct ctx {
      device* d;
      bool kernarg;
    } context{&d, kernarg};
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
        &context);
  };
  pools(state.d.gpu, state.d, false);
  pools(state.d.cpu, state.d, true);
  if (!state.d.has_coarse || !state.d.has_kernarg) {
    throw replay_failed("the " + arch + " GPU has no coarse-grained pool or no kernarg pool");
  }
  return state.d;
}

/// The capture in `o.dir`, which must be an HSA one.
cap::capture_directory load_hsa_capture(const options& o) {
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
  return c;
}

/// Every range reserved at its own address, backed from the coarse-grained pool, mapped, and
/// made accessible to the GPU and the CPU; a base the runtime moves aborts before anything runs.
void place_ranges(const device& d, const std::vector<sc::va_range>& ranges) {
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
}

/// Each region's captured before-state, copied to its address; the bytes are kept for the
/// restores before the timed dispatches.
std::vector<std::vector<std::uint8_t>> restore_contents(const cap::capture_directory& c) {
  std::vector<std::vector<std::uint8_t>> before(c.regions.size());
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    before[i] = cap::read_bytes(c.dir, c.regions[i].file, c.regions[i].size);
    check(hsa_memory_copy(reinterpret_cast<void*>(c.regions[i].base), before[i].data(),
                          before[i].size()),
          "restoring region " + sc::hex_address(c.regions[i].base));
  }
  return before;
}

/// Red zones (stages/capture/red_zones.hpp), filled with the pattern: every range is reserved and
/// mapped at its own address here, so they are all its bytes outside every region.
std::vector<sc::va_range> fill_red_zones(const std::vector<sc::va_range>& ranges,
                                         const cap::capture_directory& c) {
  auto zones = sc::red_zones(ranges, c.regions);
  std::vector<std::uint8_t> bytes;
  for (const auto& z : zones) {
    bytes.resize(z.size);
    for (std::uint64_t i = 0; i < z.size; ++i) {
      bytes[i] = sc::red_zone_byte(z.base + i);
    }
    check(hsa_memory_copy(reinterpret_cast<void*>(z.base), bytes.data(), bytes.size()),
          "filling the red zone at " + sc::hex_address(z.base));
  }
  return zones;
}

/// The first changed byte of the zones. Every dispatch before it has completed: dispatch() waits
/// for its completion signal.
std::optional<sc::red_zone_violation> check_red_zones(const std::vector<sc::va_range>& zones,
                                                      const cap::capture_directory& c) {
  std::optional<sc::red_zone_violation> found;
  std::vector<std::uint8_t> now;
  for (const auto& z : zones) {
    now.resize(z.size);
    check(hsa_memory_copy(now.data(), reinterpret_cast<const void*>(z.base), now.size()),
          "reading the red zone at " + sc::hex_address(z.base));
    sc::check_red_zone(z, now, c.regions, found);
  }
  return found;
}

/// The code object loaded for the GPU; `packet` gets its kernel's object.
void load_kernel(const cap::capture_directory& c, const device& d, sc::aql_dispatch& packet) {
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
}

/// The captured packet on this process's own queue, with its kernarg buffer and completion signal.
class dispatcher {
public:
  /// The kernarg segment copied to a kernarg-pool buffer, a profiling queue, a signal.
  dispatcher(const cap::capture_directory& c, const device& d, sc::aql_dispatch packet)
      : gpu_(d.gpu), packet_(packet) {
    void* kernarg = nullptr;
    check(hsa_amd_memory_pool_allocate(d.kernarg, std::max<std::size_t>(c.kernarg.size(), 16), 0,
                                       &kernarg),
          "a kernarg buffer");
    check(hsa_amd_agents_allow_access(1, &d.gpu, nullptr, kernarg), "kernarg access");
    std::memcpy(kernarg, c.kernarg.data(), c.kernarg.size());
    packet_.kernarg_address = reinterpret_cast<std::uint64_t>(kernarg);
    check(hsa_queue_create(d.gpu, 64, HSA_QUEUE_TYPE_SINGLE, nullptr, nullptr, UINT32_MAX,
                           UINT32_MAX, &queue_),
          "hsa_queue_create");
    check(hsa_amd_profiling_set_profiler_enabled(queue_, 1), "profiling");
    check(hsa_signal_create(1, 0, nullptr, &done_), "hsa_signal_create");
    packet_.completion_signal = done_.handle;
  }

  /// One dispatch: the packet written with its header last, the doorbell rung, the signal
  /// awaited (so it has completed on return); its time from the packet's profiling timestamps.
  std::int64_t operator()() const {
    hsa_signal_store_relaxed(done_, 1);
    const std::uint64_t index = hsa_queue_add_write_index_relaxed(queue_, 1);
    auto* slot = static_cast<std::uint8_t*>(queue_->base_address) + 64 * (index % queue_->size);
    const auto bytes = sc::encode_aql_dispatch(packet_);
    std::memcpy(slot + 2, bytes.data() + 2, 62);
    const std::uint32_t header_setup = static_cast<std::uint32_t>(packet_.header) |
                                       (static_cast<std::uint32_t>(packet_.setup) << 16);
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(slot), header_setup, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue_->doorbell_signal, static_cast<hsa_signal_value_t>(index));
    hsa_signal_wait_scacquire(done_, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                              HSA_WAIT_STATE_BLOCKED);
    hsa_amd_profiling_dispatch_time_t time{};
    check(hsa_amd_profiling_get_dispatch_time(gpu_, done_, &time), "the dispatch's timestamps");
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    hsa_amd_profiling_convert_tick_to_system_domain(gpu_, time.start, &start);
    hsa_amd_profiling_convert_tick_to_system_domain(gpu_, time.end, &end);
    std::uint64_t frequency = 1;
    hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &frequency);
    return static_cast<std::int64_t>(static_cast<double>(end - start) * 1e9 /
                                     static_cast<double>(frequency));
  }

private:
  hsa_agent_t gpu_{};
  sc::aql_dispatch packet_;
  hsa_queue_t* queue_ = nullptr;
  hsa_signal_t done_{};
};

/// The regions after the dispatch that just ran, read back and checked against the capture.
rp::region_check verify(const options& o,
                        const cap::capture_directory& c,
                        const std::vector<std::vector<std::uint8_t>>& before) {
  return rp::check_regions(
      c, before,
      [&](std::size_t i) {
        std::vector<std::uint8_t> now(c.regions[i].size);
        check(hsa_memory_copy(now.data(), reinterpret_cast<void*>(c.regions[i].base), now.size()),
              "reading region " + sc::hex_address(c.regions[i].base));
        return now;
      },
      o.tolerance);
}

/// Warm-up and timed dispatches, the written regions restored before each (outside its
/// timestamps); the timed ones' samples.
std::vector<std::int64_t> time_dispatches(const options& o,
                                          const cap::capture_directory& c,
                                          const std::vector<std::size_t>& written,
                                          const std::vector<std::vector<std::uint8_t>>& before,
                                          const dispatcher& dispatch) {
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
  return samples;
}

int run(const options& o) {
  const cap::capture_directory c = load_hsa_capture(o);
  auto packet = sc::decode_aql_dispatch(cap::read_bytes(c.dir, "packet.bin", 64));
  check(hsa_init(), "hsa_init");
  const device d = find_device(c.dispatch.arch);
  std::size_t granule = 0;
  check(hsa_amd_memory_pool_get_info(d.coarse, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE,
                                     &granule),
        "the pool's allocation granule");
  // 1. Memory at its addresses, its contents and red zones, before the code object is loaded.
  const auto ranges = sc::reservation_ranges(c.regions, std::max<std::uint64_t>(granule, 4096));
  place_ranges(d, ranges);
  const auto before = restore_contents(c);
  const auto zones = fill_red_zones(ranges, c);
  // 2. The code object, the kernarg segment, the queue.
  load_kernel(c, d, packet);
  const dispatcher dispatch(c, d, packet);
  // 3. One dispatch, verified: the regions and the red zones.
  dispatch();
  const auto verified = verify(o, c, before);
  char device_name[64] = {0};
  hsa_agent_get_info(d.gpu, HSA_AGENT_INFO_NAME, device_name);
  nlohmann::json out = {
      {"kernel", c.dispatch.kernel},
      {"capture", o.dir},
      {"device", {{"name", device_name}, {"arch", c.dispatch.arch}}},
      {"addresses", "original"},
      {"placement", "hsa virtual memory reservation"},
      {"granularity", granule},
      {"regions", c.regions.size()},
      {"reserved_ranges", ranges.size()},
      {"verification", rp::verification_json(verified, c.regions.size(), o.tolerance)},
      {"timing", nullptr}};
  const auto stray = check_red_zones(zones, c);
  out["red_zones"] = rp::red_zones_json(zones, stray, "the replayed dispatch");
  if (!verified.passed() || stray) {
    rp::emit(o, out);
    return 3;
  }
  // 4. Time, then the red zones once more.
  const auto samples = time_dispatches(o, c, verified.written, before, dispatch);
  if (const auto late = check_red_zones(zones, c)) {
    out["red_zones"] = rp::red_zones_json(zones, late, "the timed launches");
    rp::emit(o, out);
    return 3;
  }
  rp::timing_details how;
  how.method = rp::timing_method::hsa_dispatch_timestamps;
  out["timing"] = rp::timing_json(samples, o, verified.written.size(), how);
  rp::emit(o, out);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  return rp::replay_main("rpl-replay-hsa", [&] { return run(parse(argc, argv)); });
}
