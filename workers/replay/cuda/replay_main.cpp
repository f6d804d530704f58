// rpl-replay-cuda: replays one captured dispatch (stages/capture/capture_manifest.hpp) in this
// fresh process, at the addresses it had when captured, with no pointer rewriting. Run by
// `rocm-perf replay` (engine/commands/replay.cpp), which documents the options; it prints one JSON
// document on stdout.
//
//   1. reserve every region's granularity-aligned range at its original address
//      (cuMemAddressReserve with that address; the driver moves an occupied hint silently, so the
//      returned base is compared and a difference aborts), then cuMemCreate + cuMemMap +
//      cuMemSetAccess;
//   2. restore each region's captured contents, load the code object, launch with the captured
//      parameter bytes and geometry;
//   3. verify every region against the captured after-state (unchanged regions against their
//      before-state): bit-exact, or float32 within a tolerance; and the red zones, the reserved
//      bytes outside every region, filled with a pattern before the launch, unchanged (again
//      after the timed launches; stages/capture/red_zones.hpp);
//   4. time warm-up + N launches, restoring the regions the kernel writes before each one
//      (device-to-device from pristine copies on the stream, outside what is timed). --timing:
//      cupti (the default): each launch's GPU start/end from CUPTI's kernel activity records, as
//      the tracer times the application (cupti_kernel_timer.hpp; CUPTI attaches only now, so its
//      own allocations come after the placement); events: an event pair around each launch;
//      batch: events around --batch-size back-to-back launches, for kernels whose second launch
//      without restoring writes the same output. A CUPTI that cannot be used (not installed,
//      another CUPTI client attached, records missing) falls back to events, with a warning and
//      the reason in the JSON.
//
// --relocate replays elsewhere on purpose, as pointer-translating replayers do: every range is
// mapped at another address with its contents, the kernel's pointer parameters are translated,
// pointers stored in memory are not, and the original ranges hold zeros. A kernel that follows
// pointers stored in memory then reads and writes the wrong memory, and verification must fail:
// the test that the check is real.
//
// Exit: 0 verified (and timed), 1 the replay failed (an address could not be had, a CUDA error),
// 2 bad input (arguments, a damaged capture, another GPU architecture), 3 verification failed.

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include <cuda.h>
#include <nlohmann/json.hpp>

#include "stages/capture/red_zones.hpp"
#include "stages/capture/va_ranges.hpp"
#include "stages/capture/walk_zones.hpp"
#include "workers/capture/capture_directory.hpp"
#include "workers/lanes/kernel/process/run_lane.hpp"
#include "workers/lanes/replay/process/replay_server.hpp"
#include "workers/replay/cuda/cupti_kernel_timer.hpp"
#include "workers/replay/replay_report.hpp"
#include "workers/replay/replay_timing.hpp"

namespace {

namespace sc = rpl::stages::capture;
namespace cap = rpl::workers::capture;
namespace rp = rpl::workers::replay;

using rpl::workers::replay::bad_input;
using rpl::workers::replay::replay_failed;
/// The driver gave a reservation another address than the one asked for.
struct address_moved : replay_failed {
  using replay_failed::replay_failed;
};

void check(CUresult rc, const std::string& what) {
  if (rc != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(rc, &name);
    throw replay_failed(what + ": " +
                        (name != nullptr ? name : std::to_string(static_cast<int>(rc))));
  }
}

struct options : rpl::workers::replay::replay_arguments {
  bool relocate = false;
  /// A tuning candidate in place of the captured kernel: its code object and symbol (same
  /// parameter list); the capture's geometry.
  std::string code_object;
  std::string kernel;
  rp::timing_method timing = rp::timing_method::cupti_kernel_activity;
  int batch_size = 10; ///< --timing batch: launches per event pair
  /// --serve: the long-lived replay lane (workers/lanes/replay/process/): after placing and
  /// restoring the capture, answer kernel-lane request frames on stdin until it closes.
  bool serve = false;
};

options parse(int argc, char** argv) {
  options o;
  static_cast<rpl::workers::replay::replay_arguments&>(o) =
      rpl::workers::replay::parse_replay_arguments(
          argc, argv, [&](const std::string& flag, const std::function<std::string()>& value) {
            if (flag == "--code-object") {
              o.code_object = value();
            } else if (flag == "--kernel") {
              o.kernel = value();
            } else if (flag == "--relocate") {
              o.relocate = true;
            } else if (flag == "--serve") {
              o.serve = true;
            } else if (flag == "--timing") {
              const auto text = value();
              const auto method = rp::parse_timing_flag(text);
              if (!method) {
                throw bad_input("--timing '" + text + "': expected cupti, events or batch");
              }
              o.timing = *method;
            } else if (flag == "--batch-size") {
              o.batch_size = std::stoi(value());
              if (o.batch_size < 1) {
                throw bad_input("--batch-size must be at least 1");
              }
            } else {
              return false;
            }
            return true;
          });
  if (o.serve && o.relocate) {
    throw bad_input("--serve and --relocate exclude each other: the lane replays at the "
                    "original addresses; fix: drop --relocate");
  }
  return o;
}

/// One mapped range: reserved, backed and accessible.
struct mapping {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
};

/// Where the driver's own address-space pools go. The CUDA driver reserves large areas of virtual
/// addresses for itself when it starts (mmap, PROT_NONE, no address) and carves every allocation
/// from them; it honours an address asked of cuMemAddressReserve only inside those areas, and the
/// kernel places them anywhere (ASLR). So the capture records them (capture_injection.cpp's mmap)
/// and this program's mmap, below, puts each of the driver's requests of a recorded size at the
/// recorded address, held meanwhile by a placeholder so nothing else takes it.
struct pool_steering {
  std::vector<sc::va_pool> pools;
  std::vector<char> used;
  bool active = false;
  std::size_t placed = 0;
  // Placeholders over the union of the recorded pools (they overlap: the driver trims each one
  // to its alignment and the next may take what it gave back). A fixed array, as mmap may be
  // called where allocating is not allowed.
  static constexpr std::size_t max_holds = 512;
  std::uint64_t hold_lo[max_holds] = {};
  std::uint64_t hold_hi[max_holds] = {};
  std::size_t holds = 0;
};
pool_steering steering;

/// Gives [lo, hi) back from the placeholders (only what they still cover).
void release_hold(std::uint64_t lo, std::uint64_t hi) {
  auto& st = steering;
  for (std::size_t i = 0; i < st.holds;) {
    const std::uint64_t a = std::max(lo, st.hold_lo[i]);
    const std::uint64_t b = std::min(hi, st.hold_hi[i]);
    if (a >= b) {
      ++i;
      continue;
    }
    ::syscall(SYS_munmap, a, b - a);
    const std::uint64_t old_lo = st.hold_lo[i];
    const std::uint64_t old_hi = st.hold_hi[i];
    // Keep the pieces left of and right of [a, b).
    if (old_lo < a && b < old_hi && st.holds < pool_steering::max_holds) {
      st.hold_hi[i] = a;
      st.hold_lo[st.holds] = b;
      st.hold_hi[st.holds] = old_hi;
      ++st.holds;
      ++i;
    } else if (old_lo < a) {
      st.hold_hi[i] = a;
      ++i;
    } else if (b < old_hi) {
      st.hold_lo[i] = b;
      ++i;
    } else {
      st.hold_lo[i] = st.hold_lo[st.holds - 1];
      st.hold_hi[i] = st.hold_hi[st.holds - 1];
      --st.holds;
    }
  }
}

bool hold_pools(const std::vector<sc::va_pool>& pools, std::string& taken) {
  steering.pools = pools;
  steering.used.assign(pools.size(), 0);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const auto& p : pools) {
    spans.emplace_back(p.base, p.base + p.size);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  for (const auto& [lo, hi] : merged) {
    void* at = reinterpret_cast<void*>(
        ::syscall(SYS_mmap, lo, hi - lo, PROT_NONE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0));
    if (at != reinterpret_cast<void*>(lo) || steering.holds == pool_steering::max_holds) {
      if (at != MAP_FAILED && at != reinterpret_cast<void*>(lo)) {
        ::syscall(SYS_munmap, at, hi - lo);
      }
      taken = "[" + sc::hex_address(lo) + ", " + sc::hex_address(hi) + ")";
      release_hold(0, UINT64_MAX);
      return false;
    }
    steering.hold_lo[steering.holds] = lo;
    steering.hold_hi[steering.holds] = hi;
    ++steering.holds;
  }
  return true;
}

void release_unused_pools() {
  release_hold(0, UINT64_MAX);
}

/// Starts this program again (a new address-space layout) after `attempt` failed tries.
[[noreturn]] void exec_again(int attempt) {
  ::setenv("RPL_REPLAY_ATTEMPT", std::to_string(attempt + 1).c_str(), 1);
  std::vector<char> self(4096);
  const auto n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(cmdline, arg, '\0')) {
    args.push_back(arg);
  }
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  if (n > 0) {
    ::execv(std::string(self.data(), static_cast<std::size_t>(n)).c_str(), argv.data());
  }
  throw replay_failed("could not start the replay again: " + std::string(std::strerror(errno)));
}

mapping map_range(std::uint64_t want,
                  std::size_t size,
                  const CUmemAllocationProp& prop,
                  CUdevice device,
                  std::size_t alignment) {
  mapping m;
  m.size = size;
  check(cuMemAddressReserve(&m.base, size, alignment, static_cast<CUdeviceptr>(want), 0),
        "cuMemAddressReserve at " + sc::hex_address(want));
  if (want != 0 && m.base != want) {
    cuMemAddressFree(m.base, size);
    if (std::getenv("RPL_REPLAY_DEBUG") != nullptr) {
      // What the address space looks like around the wanted range, and what smaller or farther
      // requests get.
      std::ifstream maps("/proc/self/maps");
      std::string line;
      std::fprintf(stderr, "debug: wanted %s +%zu, got %s; pools placed %zu of %zu\n",
                   sc::hex_address(want).c_str(), size, sc::hex_address(m.base).c_str(),
                   steering.placed, steering.pools.size());
      while (std::getline(maps, line)) {
        const auto start = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
        if (start + (1ull << 30) > want && start < want + (1ull << 30)) {
          std::fprintf(stderr, "debug: map %s\n", line.c_str());
        }
      }
      for (const std::uint64_t probe : std::initializer_list<std::uint64_t>{
               want, want + (2ull << 20), want + (1ull << 30), want + (1ull << 40),
               0x7e0000000000ull, 0x200000000000ull}) {
        for (const std::size_t bytes : std::initializer_list<std::size_t>{alignment, size}) {
          CUdeviceptr got = 0;
          for (const std::size_t align : std::initializer_list<std::size_t>{0, alignment}) {
            const auto rc = cuMemAddressReserve(&got, bytes, align, probe, 0);
            std::fprintf(stderr, "debug: reserve %s +%zu align %zu -> %s (rc %d)\n",
                         sc::hex_address(probe).c_str(), bytes, align, sc::hex_address(got).c_str(),
                         static_cast<int>(rc));
            if (rc == CUDA_SUCCESS) {
              cuMemAddressFree(got, bytes);
            }
          }
        }
      }
    }
    throw address_moved("could not reserve [" + sc::hex_address(want) + ", +" +
                        std::to_string(size) + ") at its original address: the driver returned " +
                        sc::hex_address(m.base) +
                        " (the range is taken in this process); nothing was replayed");
  }
  check(cuMemCreate(&m.handle, size, &prop, 0), "cuMemCreate(" + std::to_string(size) + ")");
  check(cuMemMap(m.base, size, 0, m.handle, 0), "cuMemMap at " + sc::hex_address(m.base));
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(cuMemSetAccess(m.base, size, &access, 1), "cuMemSetAccess at " + sc::hex_address(m.base));
  check(cuMemsetD8(m.base, 0, size), "clearing " + sc::hex_address(m.base));
  return m;
}

/// The capture named by the options, with their overrides; a capture of another backend is bad
/// input.
cap::capture_directory load_replay_capture(const options& o) {
  cap::capture_directory c;
  try {
    c = cap::load_capture(o.dir);
  } catch (const sc::capture_error& error) {
    throw bad_input(error.what());
  }
  if (!o.code_object.empty()) {
    const auto path = std::filesystem::absolute(o.code_object);
    c.code_object = cap::read_bytes(path.parent_path(), path.filename().string());
  }
  if (!o.kernel.empty()) {
    c.dispatch.kernel = o.kernel;
  }
  if (c.dispatch.backend != "cuda") {
    throw bad_input(o.dir + ": a " + c.dispatch.backend +
                    " capture; this program replays CUDA captures (fix: replay it on its backend)");
  }
  return c;
}

/// Holds the driver's pools where the captured process had them (steer_pools) until CUDA asks for
/// them; a range taken already makes the process start again (a few tries), then fails.
void hold_driver_pools(const cap::capture_directory& c) {
  const int attempt = [] {
    const char* text = std::getenv("RPL_REPLAY_ATTEMPT");
    return text != nullptr ? std::atoi(text) : 0;
  }();
  std::string taken;
  if (!hold_pools(c.dispatch.driver_pools, taken)) {
    if (attempt < 4) {
      exec_again(attempt);
    }
    throw replay_failed(
        "the driver's address range " + taken +
        " is taken in this process before CUDA starts (a library or the heap), in " +
        std::to_string(attempt + 1) + " tries; nothing was replayed");
  }
  steering.active = true;
}

/// GPU 0, which must have the capture's architecture, with its primary context current.
struct replay_device {
  CUdevice device = 0;
  std::string arch; ///< "sm_90"
  std::string name;
};

replay_device open_device(const options& o, const cap::capture_directory& c) {
  replay_device d;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&d.device, 0), "cuDeviceGet(0)");
  int major = 0;
  int minor = 0;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.device);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.device);
  d.arch = "sm_" + std::to_string(major * 10 + minor);
  char device_name[256] = {0};
  cuDeviceGetName(device_name, sizeof device_name, d.device);
  d.name = device_name;
  if (d.arch != c.dispatch.arch) {
    throw bad_input(o.dir + ": captured on " + c.dispatch.arch + " (" + c.dispatch.device_name +
                    "), but this GPU is " + d.arch + " (" + d.name +
                    "); fix: replay on a GPU of the capture's architecture (CUDA_VISIBLE_DEVICES)");
  }
  CUcontext context = nullptr;
  check(cuDevicePrimaryCtxRetain(&context, d.device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return d;
}

/// How the regions got their original addresses.
struct placement {
  std::vector<mapping> originals; ///< the virtual memory reservations, when they worked
  std::string how = "virtual memory reservation";
  std::size_t fillers = 0; ///< allocations the walk made on its way (freed again unless kept)
  /// After a walk: the bytes of this process's own allocations around the regions (each
  /// region's slack, the fillers and claims kept next to one), whence its red zones
  /// (stages/capture/walk_zones.hpp).
  std::vector<sc::va_range> owned;
};

/// An allocation the walk made that holds no region.
struct spare_allocation {
  CUdeviceptr base = 0;
  std::uint64_t size = 0;
};

/// The largest filler kept as a red zone (its first or last bytes are the zone; the rest is held
/// for nothing).
constexpr std::uint64_t kept_filler_limit = 64ull << 20;

/// Keeps the spare allocations that lie within reach of a region (their bytes next to it are red
/// zones, and no later allocation of this process lands there), frees the others.
void keep_near_regions(std::vector<spare_allocation>& spares,
                       const cap::capture_directory& c,
                       placement& out) {
  for (const auto& s : spares) {
    if (s.size <= kept_filler_limit && sc::within_reach({s.base, s.size}, c.regions)) {
      out.owned.push_back({s.base, s.size});
    } else {
      cuMemFree(s.base);
    }
  }
  spares.clear();
}

/// Claims the free bytes after the last regions of the allocator's areas: small allocations,
/// which it hands out from the lowest free step, made while the walk's fillers still hold the
/// program's other addresses; keep_near_regions keeps those next to a region.
void claim_after_regions(std::vector<spare_allocation>& spares, const cap::capture_directory& c) {
  constexpr std::uint64_t step = 512;
  const std::size_t claims = std::min<std::size_t>(8 * c.regions.size() + 16, 1024);
  for (std::size_t i = 0; i < claims; ++i) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, step) != CUDA_SUCCESS) {
      return;
    }
    spares.push_back({p, step});
  }
}

/// The allocation walk: each region cuMemAlloc'd, in the program's allocation order, until the
/// allocator returns its recorded address, asking sc::walk_request(size) when `padded` (the
/// bytes past the region become its own), else its size. What lands elsewhere stays allocated (a
/// filler) so the allocator moves on, as the program's own freed and internal allocations made
/// it; an allocation that lands on another unplaced region of the same size takes that one.
/// Fillers and claims next to a region are kept (placement::owned), the others freed. On failure
/// everything it allocated is freed again.
void walk_allocations(const cap::capture_directory& c,
                      const std::string& vmm_failure,
                      bool padded,
                      placement& out) {
  std::vector<std::size_t> order(c.regions.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::sort(order.begin(), order.end(),
            [&](auto x, auto y) { return c.regions[x].order < c.regions[y].order; });
  std::vector<char> placed(c.regions.size(), 0);
  std::vector<spare_allocation> spares;
  std::uint64_t filler_bytes = 0;
  const std::uint64_t filler_limit = 64ull << 30;
  auto give_back = [&] {
    for (const auto& s : spares) {
      cuMemFree(s.base);
    }
    for (std::size_t j = 0; j < c.regions.size(); ++j) {
      if (placed[j] != 0) {
        cuMemFree(c.regions[j].base);
      }
    }
  };
  for (const auto i : order) {
    const auto& r = c.regions[i];
    const std::uint64_t request = padded ? sc::walk_request(r.size) : r.size;
    while (placed[i] == 0) {
      CUdeviceptr p = 0;
      if (const CUresult e = cuMemAlloc(&p, request); e != CUDA_SUCCESS) {
        give_back();
        check(e,
              "cuMemAlloc(" + std::to_string(request) + ") walking to " + sc::hex_address(r.base));
      }
      std::size_t hit = c.regions.size();
      for (std::size_t j = 0; j < c.regions.size(); ++j) {
        if (placed[j] == 0 && c.regions[j].base == p && c.regions[j].size == r.size) {
          hit = j;
        }
      }
      if (hit < c.regions.size()) {
        placed[hit] = 1;
        check(cuMemsetD8(p, 0, r.size), "clearing " + sc::hex_address(p));
        out.owned.push_back({p, request});
        continue;
      }
      spares.push_back({p, request});
      filler_bytes += request;
      if (filler_bytes > filler_limit || spares.size() > 200000) {
        give_back();
        throw replay_failed(vmm_failure + "; and cuMemAlloc, walked with " +
                            std::to_string(spares.size()) + " fillers (" +
                            std::to_string(filler_bytes >> 20) + " MiB), never returned " +
                            sc::hex_address(r.base) + " (" + std::to_string(r.size) +
                            " bytes); nothing was replayed");
      }
    }
  }
  out.fillers = spares.size();
  claim_after_regions(spares, c);
  keep_near_regions(spares, c, out);
}

/// 1. The original addresses, inside the driver's pools where it has them. The virtual memory API
/// first (cuMemAddressReserve honours an address only where its own reservations live); else the
/// allocations themselves, walked to their addresses (cuMemAlloc from the same pools, with
/// fillers below each until it returns the recorded address).
placement place_regions(const cap::capture_directory& c,
                        const std::vector<sc::va_range>& ranges,
                        const CUmemAllocationProp& prop,
                        CUdevice device,
                        std::size_t granularity) {
  placement out;
  try {
    for (const auto& r : ranges) {
      out.originals.push_back(map_range(r.base, r.size, prop, device, granularity));
    }
  } catch (const address_moved& error) {
    const std::string vmm_failure = error.what();
    for (const auto& m : out.originals) {
      cuMemUnmap(m.base, m.size);
      cuMemRelease(m.handle);
      cuMemAddressFree(m.base, m.size);
    }
    out.originals.clear();
    out.how = "allocation walk";
    try {
      walk_allocations(c, vmm_failure, true, out);
    } catch (const replay_failed& padded) {
      // The padded requests moved the allocator off the program's addresses (another driver's
      // steps): walked again at the regions' own sizes, without their slack.
      out.owned.clear();
      std::fprintf(stderr, "rpl-replay-cuda: %s; walking again without red-zone slack\n",
                   padded.what());
      walk_allocations(c, vmm_failure, false, out);
    }
  }
  return out;
}

/// Where each region's bytes live in this replay: its own address, or (--relocate) another
/// mapping of its range.
struct region_homes {
  std::vector<CUdeviceptr> where; ///< per region
  std::vector<mapping> moved;     ///< the other mappings (--relocate)

  /// A pointer into a region, moved with it; any other value as it is.
  std::uint64_t translate(const cap::capture_directory& c, std::uint64_t value) const {
    for (std::size_t i = 0; i < c.regions.size(); ++i) {
      if (value >= c.regions[i].base && value < c.regions[i].base + c.regions[i].size) {
        return where[i] + (value - c.regions[i].base);
      }
    }
    return value;
  }
};

region_homes home_regions(const options& o,
                          const cap::capture_directory& c,
                          const std::vector<sc::va_range>& ranges,
                          const CUmemAllocationProp& prop,
                          CUdevice device,
                          std::size_t granularity) {
  region_homes homes;
  homes.where.resize(c.regions.size());
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    homes.where[i] = c.regions[i].base;
  }
  if (!o.relocate) {
    return homes;
  }
  std::map<std::uint64_t, std::uint64_t> delta_by_range; // original range base -> new base
  for (const auto& r : ranges) {
    homes.moved.push_back(map_range(0, r.size, prop, device, granularity));
    delta_by_range[r.base] = homes.moved.back().base;
  }
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    auto it = delta_by_range.upper_bound(c.regions[i].base);
    --it;
    homes.where[i] = it->second + (c.regions[i].base - it->first);
  }
  return homes;
}

/// 2. Each region's captured contents, copied to where it lives; returned for the verification.
std::vector<std::vector<std::uint8_t>> restore_contents(const cap::capture_directory& c,
                                                        const region_homes& homes) {
  std::vector<std::vector<std::uint8_t>> before(c.regions.size());
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    before[i] = cap::read_bytes(c.dir, c.regions[i].file, c.regions[i].size);
    check(cuMemcpyHtoD(homes.where[i], before[i].data(), before[i].size()),
          "restoring region " + sc::hex_address(c.regions[i].base));
  }
  return before;
}

/// Red zones (stages/capture/red_zones.hpp), filled with the pattern: the reserved ranges' bytes
/// outside every region where the regions sit at their own addresses in reservations of this
/// process; after an allocation walk, the bytes of its own allocations within reach of a region
/// (stages/capture/walk_zones.hpp); none with --relocate.
std::vector<sc::va_range> fill_red_zones(const placement& placed,
                                         const options& o,
                                         const std::vector<sc::va_range>& ranges,
                                         const cap::capture_directory& c) {
  if (o.relocate) {
    return {};
  }
  const auto zones = placed.originals.empty() ? sc::walk_red_zones(c.regions, placed.owned)
                                              : sc::red_zones(ranges, c.regions);
  std::vector<std::uint8_t> bytes;
  for (const auto& z : zones) {
    bytes.resize(z.size);
    for (std::uint64_t i = 0; i < z.size; ++i) {
      bytes[i] = sc::red_zone_byte(z.base + i);
    }
    check(cuMemcpyHtoD(z.base, bytes.data(), z.size),
          "filling the red zone at " + sc::hex_address(z.base));
  }
  return zones;
}

/// The first changed byte of the zones, after the work before it on `stream`.
std::optional<sc::red_zone_violation> check_red_zones(const std::vector<sc::va_range>& zones,
                                                      const cap::capture_directory& c,
                                                      CUstream stream) {
  check(cuStreamSynchronize(stream), "the launches before the red zones' check");
  std::optional<sc::red_zone_violation> found;
  std::vector<std::uint8_t> now;
  for (const auto& z : zones) {
    now.resize(z.size);
    check(cuMemcpyDtoH(now.data(), z.base, z.size),
          "reading the red zone at " + sc::hex_address(z.base));
    sc::check_red_zone(z, now, c.regions, found);
  }
  return found;
}

/// The captured kernel from the code object, allowed the dynamic shared memory it launches with.
CUfunction load_kernel(const cap::capture_directory& c) {
  CUmodule module = nullptr;
  check(cuModuleLoadData(&module, c.code_object.data()),
        "cuModuleLoadData(" + c.dispatch.code_object_file + ")");
  CUfunction function = nullptr;
  check(cuModuleGetFunction(&function, module, c.dispatch.kernel.c_str()),
        "cuModuleGetFunction(" + c.dispatch.kernel + ")");
  if (c.dispatch.dynamic_shared_bytes > 48 * 1024) {
    check(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             static_cast<int>(c.dispatch.dynamic_shared_bytes)),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  }
  return function;
}

/// The captured parameter bytes, each pointer-sized aligned one translated (--relocate); and how
/// many of them moved.
std::pair<std::vector<std::uint8_t>, std::uint64_t>
parameter_bytes(const options& o, const cap::capture_directory& c, const region_homes& homes) {
  std::vector<std::uint8_t> kernarg = c.kernarg;
  std::uint64_t translated = 0;
  if (o.relocate) {
    for (const auto& p : c.dispatch.params) {
      if (p.size == 8 && p.offset % 8 == 0) {
        std::uint64_t value = 0;
        std::memcpy(&value, kernarg.data() + p.offset, 8);
        const auto moved_to = homes.translate(c, value);
        translated += moved_to != value ? 1 : 0;
        std::memcpy(kernarg.data() + p.offset, &moved_to, 8);
      }
    }
  }
  return {std::move(kernarg), translated};
}

/// The regions the kernel writes, restored before each launch from device copies of their
/// captured contents (device to device, on the launch stream, so outside any timed span).
class restorer {
public:
  restorer(const cap::capture_directory& c,
           const std::vector<std::size_t>& written,
           const std::vector<std::vector<std::uint8_t>>& before,
           const region_homes& homes)
      : c_(c), homes_(homes) {
    for (const auto i : written) {
      CUdeviceptr copy = 0;
      check(cuMemAlloc(&copy, c.regions[i].size), "cuMemAlloc for a pristine copy");
      check(cuMemcpyHtoD(copy, before[i].data(), before[i].size()), "pristine copy");
      pristine_.emplace_back(copy, i);
    }
  }
  void operator()(CUstream stream) const {
    for (const auto& [copy, i] : pristine_) {
      check(cuMemcpyDtoDAsync(homes_.where[i], copy, c_.regions[i].size, stream),
            "restoring inputs");
    }
  }
  std::size_t regions() const { return pristine_.size(); }

private:
  const cap::capture_directory& c_;
  const region_homes& homes_;
  std::vector<std::pair<CUdeviceptr, std::size_t>> pristine_;
};

struct timed_launches {
  std::vector<std::int64_t> samples_ns;
  std::size_t restored = 0;
  rp::timing_details how;
};

/// --timing cupti: warm-ups and timed launches queued back to back, each after its restores, no
/// events; then each timed launch's end - start from its CUPTI kernel record (matched by
/// correlation id). Nothing, with `why_not`, when CUPTI cannot be used or a record is missing.
template <class Launch>
std::optional<std::vector<std::int64_t>> time_with_cupti(const options& o,
                                                         const restorer& restore,
                                                         CUstream stream,
                                                         const Launch& launch,
                                                         rp::timing_details& how,
                                                         std::string& why_not) {
  auto timer = rp::cupti_kernel_timer::attach(why_not);
  if (!timer || !timer->start(why_not)) {
    return std::nullopt;
  }
  std::vector<std::uint32_t> warmup_ids;
  std::vector<std::uint32_t> timed_ids;
  for (int i = 0; i < o.warmup + o.iterations; ++i) {
    restore(stream);
    launch(stream);
    (i < o.warmup ? warmup_ids : timed_ids).push_back(timer->last_launch_id());
  }
  check(cuStreamSynchronize(stream), "the timed launches");
  const auto got = timer->finish();
  const auto match = rp::match_launches(got.spans, warmup_ids, timed_ids);
  how.records = rp::timing_details::record_counts{match.timed_records, match.warmup_records,
                                                  match.other_records, got.incomplete, got.dropped};
  if (!match.complete()) {
    why_not = rp::describe_missing(match, timed_ids.size(), got.incomplete, got.dropped);
    return std::nullopt;
  }
  return match.samples_ns;
}

/// Two events around work on a stream, destroyed with the pair: the two event-timed methods'.
class event_pair {
public:
  event_pair() {
    check(cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
    if (const CUresult rc = cuEventCreate(&stop_, CU_EVENT_DEFAULT); rc != CUDA_SUCCESS) {
      cuEventDestroy(start_);
      check(rc, "cuEventCreate");
    }
  }
  ~event_pair() {
    cuEventDestroy(start_);
    cuEventDestroy(stop_);
  }
  event_pair(const event_pair&) = delete;
  event_pair& operator=(const event_pair&) = delete;

  void start(CUstream stream) { check(cuEventRecord(start_, stream), "cuEventRecord"); }
  /// Records the end, waits for it (`what` names it in an error) and returns the time between.
  double stop_ns(CUstream stream, const char* what) {
    check(cuEventRecord(stop_, stream), "cuEventRecord");
    check(cuEventSynchronize(stop_), what);
    float ms = 0;
    check(cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
    return static_cast<double>(ms) * 1e6;
  }

private:
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
};

/// --timing events: an event pair around each launch, synchronized after each.
template <class Launch>
std::vector<std::int64_t>
time_with_events(const options& o, const restorer& restore, CUstream stream, const Launch& launch) {
  event_pair events;
  for (int i = 0; i < o.warmup; ++i) {
    restore(stream);
    launch(stream);
  }
  std::vector<std::int64_t> samples;
  for (int i = 0; i < o.iterations; ++i) {
    restore(stream);
    events.start(stream);
    launch(stream);
    samples.push_back(
        static_cast<std::int64_t>(events.stop_ns(stream, "the timed dispatch") + 0.5));
  }
  return samples;
}

/// --timing batch: each sample is an event pair around --batch-size back-to-back launches, divided
/// by it; nothing is restored (batch_repeats_its_output checked that nothing needs to be).
template <class Launch>
std::vector<std::int64_t>
time_with_batches(const options& o, CUstream stream, const Launch& launch) {
  event_pair events;
  for (int i = 0; i < o.warmup; ++i) {
    launch(stream);
  }
  std::vector<std::int64_t> samples;
  for (int i = 0; i < o.iterations; ++i) {
    events.start(stream);
    for (int b = 0; b < o.batch_size; ++b) {
      launch(stream);
    }
    samples.push_back(
        static_cast<std::int64_t>(events.stop_ns(stream, "the timed batch") / o.batch_size + 0.5));
  }
  return samples;
}

/// 4. Timing: warm-up + N launches by the --timing method, the regions the kernel writes restored
/// before each one outside what is timed (none with --timing batch).
template <class Launch>
timed_launches time_launches(const options& o,
                             const cap::capture_directory& c,
                             const std::vector<std::size_t>& written,
                             const std::vector<std::vector<std::uint8_t>>& before,
                             const region_homes& homes,
                             CUstream stream,
                             const Launch& launch) {
  timed_launches out;
  out.how.method = o.timing;
  if (o.timing == rp::timing_method::events_per_batch) {
    out.how.batch_size = static_cast<std::size_t>(o.batch_size);
    out.samples_ns = time_with_batches(o, stream, launch);
    return out;
  }
  const restorer restore(c, written, before, homes);
  out.restored = restore.regions();
  if (o.timing == rp::timing_method::cupti_kernel_activity) {
    std::string why_not;
    if (auto samples = time_with_cupti(o, restore, stream, launch, out.how, why_not)) {
      out.samples_ns = std::move(*samples);
      return out;
    }
    std::fprintf(stderr,
                 "rpl-replay-cuda: warning: CUPTI kernel records could not time the launches: "
                 "%s; timing with an event pair per launch instead (which adds a few "
                 "microseconds a trace does not)\n",
                 why_not.c_str());
    out.how.requested = o.timing;
    out.how.fallback_reason = why_not;
    out.how.method = rp::timing_method::events_per_launch;
  }
  out.samples_ns = time_with_events(o, restore, stream, launch);
  return out;
}

/// --timing batch times launches that are not restored between them: valid only when a second
/// launch, without restoring, leaves every region as the first did (the kernel does not read what
/// it writes: no in-place update, no accumulation). Launches once more and checks; bad_input with
/// the first region that differs otherwise.
/// One launch, waited for, then every region read back and compared with the capture.
template <class Launch>
rp::region_check launch_and_check(const options& o,
                                  const cap::capture_directory& c,
                                  const std::vector<std::vector<std::uint8_t>>& before,
                                  const region_homes& homes,
                                  CUstream stream,
                                  const Launch& launch,
                                  const std::string& what) {
  launch(stream);
  check(cuStreamSynchronize(stream), what);
  return rp::check_regions(
      c, before,
      [&](std::size_t i) {
        std::vector<std::uint8_t> now(c.regions[i].size);
        check(cuMemcpyDtoH(now.data(), homes.where[i], now.size()),
              "reading region " + sc::hex_address(c.regions[i].base));
        return now;
      },
      o.tolerance);
}

template <class Launch>
void check_batch_repeats_its_output(const options& o,
                                    const cap::capture_directory& c,
                                    const std::vector<std::vector<std::uint8_t>>& before,
                                    const region_homes& homes,
                                    CUstream stream,
                                    const Launch& launch) {
  const auto again = launch_and_check(o, c, before, homes, stream, launch, "the repeated dispatch");
  if (!again.passed()) {
    const auto& first = again.mismatched[0];
    throw bad_input(
        "--timing batch: a second launch without restoring left region " +
        first.value("base", std::string()) + " unlike the capture's after-state (" +
        std::to_string(first.value("mismatched", 0ull)) +
        " bytes differ): the kernel reads what it writes (an update in place, an accumulation), "
        "so back-to-back launches would time other work; fix: --timing cupti (the default) or "
        "--timing events, which restore the written regions before each launch");
  }
}

/// --serve: the capture (placed and restored, its red zones filled) handed to the replay lane's
/// server, which answers request frames until the engine closes stdin (exit 0; 4 after a fault
/// that lost the context; 3 with no device).
int serve(const options& o,
          const cap::capture_directory& c,
          const placement& placed,
          std::vector<std::vector<std::uint8_t>> before,
          const std::vector<sc::va_range>& zones) {
  namespace kp = rpl::workers::kernel_process;
  namespace rs = rpl::workers::replay_process;
  rs::served_capture s;
  s.kernel = c.dispatch.kernel;
  const auto& d = c.dispatch;
  s.shape.grid = {d.grid[0], d.grid[1], d.grid[2]};
  s.shape.block = {d.block[0], d.block[1], d.block[2]};
  s.shape.shared_bytes = d.dynamic_shared_bytes;
  s.kernarg = c.kernarg;
  for (const auto& p : d.params) {
    s.param_offsets.push_back(p.offset);
  }
  s.regions = c.regions;
  s.before = std::move(before);
  for (const auto& r : c.regions) {
    s.after.push_back(r.after_file.empty() ? std::vector<std::uint8_t>()
                                           : cap::read_bytes(c.dir, r.after_file, r.size));
  }
  s.zones = zones;
  s.placement = placed.how;
  s.tolerance = o.tolerance;
  const int frames_out = kp::frame_output_fd("rpl-replay-cuda --serve");
  if (frames_out < 0) {
    return kp::exit_broken_stream;
  }
  std::fprintf(stderr, "rpl-replay-cuda --serve: %s placed by %s (%zu regions, %zu red zones)\n",
               o.dir.c_str(), placed.how.c_str(), c.regions.size(), zones.size());
  const auto api = kp::make_device_api();
  rs::replay_server server(*api, std::move(s));
  auto hello = server.open(0);
  hello.pid = ::getpid();
  return kp::serve_frames(
      STDIN_FILENO, frames_out, hello,
      [&](const rpl::messages::kernel_lane_request& request) { return server.handle(request); },
      "rpl-replay-cuda --serve");
}

int run(const options& o) {
  cap::capture_directory c = load_replay_capture(o);
  hold_driver_pools(c);
  const replay_device gpu = open_device(o, c);

  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = gpu.device;
  std::size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  granularity = std::max<std::size_t>(granularity, c.dispatch.granularity);
  const auto ranges = sc::reservation_ranges(c.regions, granularity);
  const placement placed = place_regions(c, ranges, prop, gpu.device, granularity);
  // The recorded areas the driver has not asked for go back (it keeps asking for recorded
  // ones, which still land where they were).
  release_unused_pools();
  const region_homes homes = home_regions(o, c, ranges, prop, gpu.device, granularity);
  // 2. Contents, red zones, code, parameters.
  const auto before = restore_contents(c, homes);
  const auto zones = fill_red_zones(placed, o, ranges, c);
  if (o.serve) {
    return serve(o, c, placed, before, zones);
  }
  const CUfunction function = load_kernel(c);
  auto [kernarg, translated] = parameter_bytes(o, c, homes);
  std::vector<void*> params;
  for (const auto& p : c.dispatch.params) {
    params.push_back(kernarg.data() + p.offset);
  }
  const auto& d = c.dispatch;
  auto launch = [&](CUstream stream) {
    check(cuLaunchKernel(function, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1],
                         d.block[2], d.dynamic_shared_bytes, stream,
                         params.empty() ? nullptr : params.data(), nullptr),
          "cuLaunchKernel(" + d.kernel + ")");
  };
  CUstream stream = nullptr;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  // 3. One launch, verified.
  const auto verified =
      launch_and_check(o, c, before, homes, stream, launch, "the replayed dispatch");
  nlohmann::json out = {
      {"kernel", d.kernel},
      {"capture", o.dir},
      {"device", {{"name", gpu.name}, {"arch", gpu.arch}}},
      {"addresses", o.relocate ? "relocated" : "original"},
      {"granularity", granularity},
      {"regions", c.regions.size()},
      {"reserved_ranges", ranges.size()},
      {"translated_parameters", translated},
      {"driver_pools", {{"recorded", c.dispatch.driver_pools.size()}, {"placed", steering.placed}}},
      {"placement", placed.how},
      {"filler_allocations", placed.fillers},
      {"verification",
       rpl::workers::replay::verification_json(verified, c.regions.size(), o.tolerance)},
      {"timing", nullptr}};
  const auto stray = check_red_zones(zones, c, stream);
  out["red_zones"] = rp::red_zones_json(zones, stray, "the replayed dispatch");
  if (!verified.passed() || stray) {
    rpl::workers::replay::emit(o, out);
    return 3;
  }
  if (o.timing == rp::timing_method::events_per_batch && !verified.written.empty()) {
    check_batch_repeats_its_output(o, c, before, homes, stream, launch);
  }
  const auto timed = time_launches(o, c, verified.written, before, homes, stream, launch);
  if (const auto late = check_red_zones(zones, c, stream)) {
    out["red_zones"] = rp::red_zones_json(zones, late, "the timed launches");
    rpl::workers::replay::emit(o, out);
    return 3;
  }
  out["timing"] = rp::timing_json(timed.samples_ns, o, timed.restored, timed.how);
  rpl::workers::replay::emit(o, out);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  return rpl::workers::replay::replay_main("rpl-replay-cuda",
                                           [&] { return run(parse(argc, argv)); });
}

extern "C" void* mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  if (steering.active && prot == PROT_NONE && fd == -1 && (flags & MAP_FIXED) == 0) {
    for (std::size_t i = 0; i < steering.pools.size(); ++i) {
      if (steering.used[i] != 0 || steering.pools[i].size != length ||
          steering.pools[i].hint != reinterpret_cast<std::uint64_t>(address)) {
        continue;
      }
      steering.used[i] = 1;
      release_hold(steering.pools[i].base, steering.pools[i].base + length);
      void* at = reinterpret_cast<void*>(::syscall(SYS_mmap, steering.pools[i].base, length, prot,
                                                   flags | MAP_FIXED_NOREPLACE, fd, offset));
      if (at == reinterpret_cast<void*>(steering.pools[i].base)) {
        ++steering.placed;
        return at;
      }
      if (at != MAP_FAILED) {
        ::syscall(SYS_munmap, at, length);
      }
      break;
    }
  }
  return reinterpret_cast<void*>(::syscall(SYS_mmap, address, length, prot, flags, fd, offset));
}

extern "C" void* mmap64(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  return mmap(address, length, prot, flags, fd, offset);
}
