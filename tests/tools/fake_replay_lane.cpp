// A stand-in for `rpl-replay-cuda --serve DIR` on machines without a GPU (CI): the real replay
// lane server (workers/lanes/replay/process/replay_server.hpp) and frame loop over the scripted
// device of fake_device_api.hpp, on a "capture" it makes itself in host memory: region `in` (N
// floats i * 0.5, not written by the dispatch), region `out` (N floats, zeros before, in * 1
// after: the captured kernel is `scale` with factor 1), each between two 4096-byte red zones, and
// the parameters (in, out, N). So tests/integration/workers_served_replay_lane_test.cpp drives
// workers::served_replay_lane through the real engine-side kernel lane against it: the checked
// launch against the after-state, inputs written, red zones, spot checks, restores before every
// timed launch, faults and restarts.
//
// Usage: fake_replay_lane --serve DIR [N] (N defaults to 1000). A DIR whose name ends in
// "adjacent" puts a region the dispatch does not write right after `out`, with no zone between;
// one ending in "preceded", right before it.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "stages/capture/red_zones.hpp"
#include "tools/fake_device_api.hpp"
#include "workers/lanes/kernel/process/run_lane.hpp"
#include "workers/lanes/replay/process/replay_server.hpp"

namespace {

namespace kp = rpl::workers::kernel_process;
namespace rs = rpl::workers::replay_process;
namespace sc = rpl::stages::capture;

constexpr std::uint64_t zone_bytes = 4096;

/// A region between two red zones, in host memory that lives as long as the process; with
/// `neighbour`, a second region of that many bytes right after it, and with `leading`, one of
/// that many bytes right before it (no zone between: the allocation walk's layout), the zones
/// outside those.
std::uint64_t region_with_zones(std::uint64_t bytes,
                                rs::served_capture& capture,
                                std::uint64_t neighbour = 0,
                                std::uint64_t leading = 0) {
  auto* block =
      static_cast<std::uint8_t*>(std::calloc(leading + bytes + neighbour + 2 * zone_bytes, 1));
  const auto first = reinterpret_cast<std::uint64_t>(block) + zone_bytes;
  const auto base = first + leading;
  for (const sc::va_range zone : {sc::va_range{first - zone_bytes, zone_bytes},
                                  sc::va_range{base + bytes + neighbour, zone_bytes}}) {
    for (std::uint64_t i = 0; i < zone.size; ++i)
      reinterpret_cast<std::uint8_t*>(zone.base)[i] = sc::red_zone_byte(zone.base + i);
    capture.zones.push_back(zone);
  }
  if (leading > 0)
    capture.regions.push_back({first, leading, "", "", capture.regions.size()});
  capture.regions.push_back({base, bytes, "", "", capture.regions.size()});
  if (neighbour > 0)
    capture.regions.push_back({base + bytes, neighbour, "", "", capture.regions.size()});
  return base;
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

// lane_main's, linked with the core; this stand-in serves through serve_frames instead.
std::unique_ptr<kp::device_api> kp::make_device_api() {
  return std::make_unique<kp::fake::fake_device_api>();
}

int main(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "--serve") {
    std::fprintf(stderr, "usage: %s --serve DIR [N]\n", argv[0]);
    return 2;
  }
  const std::int32_t n = argc > 3 ? std::atoi(argv[3]) : 1000;
  const auto bytes = static_cast<std::uint64_t>(n) * sizeof(float);
  rs::served_capture capture;
  capture.kernel = "scale";
  capture.placement = "host memory (stand-in)";
  // A DIR named ...adjacent: `out` is followed at once by a 4096-byte region the dispatch does
  // not write, as the allocation walk places allocations; ...preceded: such a region comes right
  // before `out`.
  const std::string dir = argv[2];
  const bool adjacent = ends_with(dir, "adjacent");
  const bool preceded = ends_with(dir, "preceded");
  const std::uint64_t in = region_with_zones(bytes, capture);
  const std::uint64_t out =
      region_with_zones(bytes, capture, adjacent ? zone_bytes : 0, preceded ? zone_bytes : 0);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i)
    values[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f;
  const auto* raw = reinterpret_cast<const std::uint8_t*>(values.data());
  std::copy(raw, raw + bytes, reinterpret_cast<std::uint8_t*>(in));
  capture.before = {std::vector<std::uint8_t>(raw, raw + bytes)};
  capture.after = {{}};
  if (preceded) {
    capture.before.emplace_back(zone_bytes, 0);
    capture.after.emplace_back();
  }
  capture.before.emplace_back(bytes, 0);
  capture.after.emplace_back(raw, raw + bytes);
  if (adjacent) {
    capture.before.emplace_back(zone_bytes, 0);
    capture.after.emplace_back();
  }
  capture.kernarg.resize(20);
  std::memcpy(capture.kernarg.data(), &in, 8);
  std::memcpy(capture.kernarg.data() + 8, &out, 8);
  std::memcpy(capture.kernarg.data() + 16, &n, 4);
  capture.param_offsets = {0, 8, 16};
  capture.shape.grid = {4, 1, 1};
  capture.shape.block = {256, 1, 1};
  const int frames_out = kp::frame_output_fd("fake_replay_lane");
  if (frames_out < 0)
    return kp::exit_broken_stream;
  kp::fake::fake_device_api api;
  rs::replay_server server(api, std::move(capture));
  auto hello = server.open(0);
  hello.pid = ::getpid();
  return kp::serve_frames(
      STDIN_FILENO, frames_out, hello,
      [&](const rpl::messages::kernel_lane_request& request) { return server.handle(request); },
      "fake_replay_lane");
}
