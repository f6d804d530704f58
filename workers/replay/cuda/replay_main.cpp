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
//      before-state): bit-exact, or float32 within a tolerance;
//   4. time warm-up + N launches with events, restoring the regions the kernel writes before each
//      one (device-to-device from pristine copies, outside the timed interval).
//
// --relocate replays elsewhere on purpose, as pointer-translating replayers do: every range is
// mapped at another address with its contents, the kernel's pointer parameters are translated,
// pointers stored in memory are not, and the original ranges hold zeros. A kernel that follows
// pointers stored in memory then reads and writes the wrong memory, and verification must fail:
// the test that the check is real.
//
// Exit: 0 verified (and timed), 1 the replay failed (an address could not be had, a CUDA error),
// 2 bad input (arguments, a damaged capture, another GPU architecture), 3 verification failed.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda.h>
#include <nlohmann/json.hpp>

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

void check(CUresult rc, const std::string& what) {
  if (rc != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(rc, &name);
    throw replay_failed(what + ": " +
                        (name != nullptr ? name : std::to_string(static_cast<int>(rc))));
  }
}

struct options {
  std::string dir;
  int iterations = 20;
  int warmup = 3;
  std::optional<sc::float_tolerance> tolerance;
  bool relocate = false;
  std::string json_out; ///< where the JSON goes (else stdout)
};

options parse(int argc, char** argv) {
  options o;
  auto number = [&](int& i, const char* flag) -> std::string {
    if (i + 1 >= argc) {
      throw bad_input(std::string(flag) + " needs a value");
    }
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iterations") {
      o.iterations = std::stoi(number(i, "--iterations"));
    } else if (a == "--warmup") {
      o.warmup = std::stoi(number(i, "--warmup"));
    } else if (a == "--tolerance-abs") {
      if (!o.tolerance)
        o.tolerance = sc::float_tolerance{};
      o.tolerance->abs = std::stod(number(i, "--tolerance-abs"));
    } else if (a == "--tolerance-rel") {
      if (!o.tolerance)
        o.tolerance = sc::float_tolerance{};
      o.tolerance->rel = std::stod(number(i, "--tolerance-rel"));
    } else if (a == "--json-out") {
      o.json_out = number(i, "--json-out");
    } else if (a == "--relocate") {
      o.relocate = true;
    } else if (o.dir.empty() && !a.empty() && a[0] != '-') {
      o.dir = a;
    } else {
      throw bad_input("unknown argument '" + a + "'");
    }
  }
  if (o.dir.empty()) {
    throw bad_input("no capture folder given");
  }
  if (o.iterations < 1 || o.warmup < 0) {
    throw bad_input("--iterations must be at least 1 and --warmup at least 0");
  }
  return o;
}

/// One mapped range: reserved, backed and accessible.
struct mapping {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
};

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
    throw replay_failed("could not reserve [" + sc::hex_address(want) + ", +" +
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

void emit(const options& o, const nlohmann::json& doc) {
  const std::string text = doc.dump(2) + "\n";
  if (o.json_out.empty()) {
    std::fputs(text.c_str(), stdout);
    return;
  }
  cap::write_text(std::filesystem::path(o.json_out).parent_path(),
                  std::filesystem::path(o.json_out).filename().string(), text);
}

int run(const options& o) {
  cap::capture_directory c;
  try {
    c = cap::load_capture(o.dir);
  } catch (const sc::capture_error& error) {
    throw bad_input(error.what());
  }
  if (c.dispatch.backend != "cuda") {
    throw bad_input(o.dir + ": a " + c.dispatch.backend +
                    " capture; this program replays CUDA captures (fix: replay it on its backend)");
  }
  check(cuInit(0), "cuInit");
  CUdevice device = 0;
  check(cuDeviceGet(&device, 0), "cuDeviceGet(0)");
  int major = 0;
  int minor = 0;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  const std::string arch = "sm_" + std::to_string(major * 10 + minor);
  char device_name[256] = {0};
  cuDeviceGetName(device_name, sizeof device_name, device);
  if (arch != c.dispatch.arch) {
    throw bad_input(o.dir + ": captured on " + c.dispatch.arch + " (" + c.dispatch.device_name +
                    "), but this GPU is " + arch + " (" + device_name +
                    "); fix: replay on a GPU of the capture's architecture (CUDA_VISIBLE_DEVICES)");
  }
  CUcontext context = nullptr;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  granularity = std::max<std::size_t>(granularity, c.dispatch.granularity);
  // 1. The original addresses, reserved before anything else can take them.
  const auto ranges = sc::reservation_ranges(c.regions, granularity);
  std::vector<mapping> originals;
  for (const auto& r : ranges) {
    originals.push_back(map_range(r.base, r.size, prop, device, granularity));
  }
  // Where each region's bytes live in this replay (relocated: another mapping of its range).
  std::vector<CUdeviceptr> where(c.regions.size());
  std::vector<mapping> moved;
  std::map<std::uint64_t, std::uint64_t> delta_by_range; // original range base -> new base
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    where[i] = c.regions[i].base;
  }
  if (o.relocate) {
    for (const auto& r : ranges) {
      moved.push_back(map_range(0, r.size, prop, device, granularity));
      delta_by_range[r.base] = moved.back().base;
    }
    for (std::size_t i = 0; i < c.regions.size(); ++i) {
      auto it = delta_by_range.upper_bound(c.regions[i].base);
      --it;
      where[i] = it->second + (c.regions[i].base - it->first);
    }
  }
  auto translate = [&](std::uint64_t value) -> std::uint64_t {
    for (std::size_t i = 0; i < c.regions.size(); ++i) {
      if (value >= c.regions[i].base && value < c.regions[i].base + c.regions[i].size) {
        return where[i] + (value - c.regions[i].base);
      }
    }
    return value;
  };
  // 2. Contents, code, parameters.
  std::vector<std::vector<std::uint8_t>> before(c.regions.size());
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    before[i] = cap::read_bytes(c.dir, c.regions[i].file, c.regions[i].size);
    check(cuMemcpyHtoD(where[i], before[i].data(), before[i].size()),
          "restoring region " + sc::hex_address(c.regions[i].base));
  }
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
  std::vector<std::uint8_t> kernarg = c.kernarg;
  std::uint64_t translated = 0;
  if (o.relocate) {
    for (const auto& p : c.dispatch.params) {
      if (p.size == 8 && p.offset % 8 == 0) {
        std::uint64_t value = 0;
        std::memcpy(&value, kernarg.data() + p.offset, 8);
        const auto moved_to = translate(value);
        translated += moved_to != value ? 1 : 0;
        std::memcpy(kernarg.data() + p.offset, &moved_to, 8);
      }
    }
  }
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
  launch(stream);
  check(cuStreamSynchronize(stream), "the replayed dispatch");
  nlohmann::json mismatches = nlohmann::json::array();
  std::vector<std::size_t> written;
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    const auto& r = c.regions[i];
    std::vector<std::uint8_t> now(r.size);
    check(cuMemcpyDtoH(now.data(), where[i], r.size), "reading region " + sc::hex_address(r.base));
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
  nlohmann::json out = {{"kernel", d.kernel},
                        {"capture", o.dir},
                        {"device", {{"name", device_name}, {"arch", arch}}},
                        {"addresses", o.relocate ? "relocated" : "original"},
                        {"granularity", granularity},
                        {"regions", c.regions.size()},
                        {"reserved_ranges", ranges.size()},
                        {"translated_parameters", translated},
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
  // 4. Timing, with the written regions restored before each launch (outside the events).
  std::vector<std::pair<CUdeviceptr, std::size_t>> pristine;
  for (const auto i : written) {
    CUdeviceptr copy = 0;
    check(cuMemAlloc(&copy, c.regions[i].size), "cuMemAlloc for a pristine copy");
    check(cuMemcpyHtoD(copy, before[i].data(), before[i].size()), "pristine copy");
    pristine.emplace_back(copy, i);
  }
  auto restore = [&] {
    for (const auto& [copy, i] : pristine) {
      check(cuMemcpyDtoDAsync(where[i], copy, c.regions[i].size, stream), "restoring inputs");
    }
  };
  CUevent start = nullptr;
  CUevent stop = nullptr;
  check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  for (int i = 0; i < o.warmup; ++i) {
    restore();
    launch(stream);
  }
  std::vector<std::int64_t> samples;
  for (int i = 0; i < o.iterations; ++i) {
    restore();
    check(cuEventRecord(start, stream), "cuEventRecord");
    launch(stream);
    check(cuEventRecord(stop, stream), "cuEventRecord");
    check(cuEventSynchronize(stop), "the timed dispatch");
    float ms = 0;
    check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    samples.push_back(static_cast<std::int64_t>(static_cast<double>(ms) * 1e6 + 0.5));
  }
  const auto stats = rpl::stages::summarize(samples);
  out["timing"] = {{"warmup", o.warmup},
                   {"iterations", o.iterations},
                   {"restored_regions", pristine.size()},
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
    std::fprintf(stderr, "rpl-replay-cuda: %s\n", error.what());
    return 2;
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "rpl-replay-cuda: a number was expected (%s)\n", error.what());
    return 2;
  } catch (const sc::capture_error& error) {
    std::fprintf(stderr, "rpl-replay-cuda: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rpl-replay-cuda: %s\n", error.what());
    return 1;
  }
}
