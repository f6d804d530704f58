// bench/red_zones: what the kernel lane's red zones cost a measurement. Two lane processes on one
// GPU, one with red zones (the default) and one started with --no-red-zones, measure the same
// code object on the same launch, alternating, --measurements times each. One measurement is
// what a sweep asks of the lane per candidate: a checked launch compared with the reference,
// then --runs timed launches (each reply carries its host time; the code object's load, which
// varies by milliseconds from file to file, is left out). Overhead = median host time with zones
// / median without - 1, against the target of issue 36 (at most 2 %); the zones' own host time
// (queue the read-back, compare), which the lane measures itself, is printed too, and is the
// steadier figure. Needs an NVIDIA GPU.
//
//   bench/red_zones --code-object gemm.cubin --launch examples/cuda/gemm.launch.json
//       --param TILE_M=64 --param TILE_N=64 --param TILE_K=16 --param THREAD_M=4
//       --param THREAD_N=4

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include <CLI/CLI.hpp>

#include "stages/search/launch_spec.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct side {
  std::vector<double> host_ms;   ///< setup + sampling, from the reply
  std::vector<double> zones_ms;  ///< the red zones' share
  std::vector<double> kernel_us; ///< the samples' median
};

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/red_zones: the kernel lane's red-zone cost per measurement"};
  std::string code_object;
  std::string launch_path;
  std::vector<std::string> params;
  std::uint32_t measurements = 60;
  std::uint32_t runs = 10;
  int device = 0;
  app.add_option("--code-object", code_object, "the kernel's cubin")->required();
  app.add_option("--launch", launch_path, "its launch file")->required();
  app.add_option("--param", params, "NAME=VALUE for the launch file's expressions");
  app.add_option("--measurements", measurements, "per side (default 60)");
  app.add_option("--runs", runs, "timed launches per measurement (default 10)");
  app.add_option("--device", device, "GPU index (default 0)");
  CLI11_PARSE(app, argc, argv);

  rpl::stages::configuration config;
  for (const auto& p : params) {
    const auto eq = p.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "red_zones: --param %s is not NAME=VALUE\n", p.c_str());
      return 2;
    }
    config.params.emplace_back(p.substr(0, eq), std::int64_t{std::stoll(p.substr(eq + 1))});
  }
  const auto resolved =
      rpl::stages::resolve_launch(rpl::stages::load_launch_spec(launch_path), config);
  if (!resolved.ok()) {
    std::fprintf(stderr, "red_zones: %s\n", resolved.error.c_str());
    return 2;
  }
  rpl::messages::measure_request request;
  request.argv = {code_object};
  request.runs = runs;
  request.warmup = 1;
  request.timeout_ms = 60000;
  request.fixed_count = true;
  request.launch = *resolved.launch;
  if (request.launch->reference && request.launch->reference->code_object_path.empty())
    request.launch->reference->code_object_path = code_object;

  namespace fs = std::filesystem;
  const fs::path scratch =
      fs::temp_directory_path() / ("rpl-red-zones-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  for (std::uint32_t i = 0; i < measurements + 2; ++i)
    fs::copy_file(code_object, scratch / ("m" + std::to_string(i) + ".cubin"),
                  fs::copy_options::overwrite_existing);
  rpl::workers::kernel_lane_options on;
  on.name = "zones";
  on.device = device;
  rpl::workers::kernel_lane_options off = on;
  off.name = "no-zones";
  off.program_args = {"--no-red-zones"};
  rpl::workers::kernel_lane with(on);
  rpl::workers::kernel_lane without(off);
  side sides[2];
  rpl::workers::kernel_lane* lanes[2] = {&with, &without};
  for (std::uint32_t i = 0; i < measurements + 2; ++i) {
    for (int s = 0; s < 2; ++s) {
      // A new file each time: a code object the lane verified already is not checked again, and
      // a sweep's candidates are new ones.
      request.candidate_key = "m" + std::to_string(i);
      request.argv = {(scratch / (request.candidate_key + ".cubin")).string()};
      const auto result = lanes[s]->measure(request);
      if (result.status != rpl::messages::measure_status::ok) {
        std::fprintf(stderr, "red_zones: %s: %s\n", s == 0 ? "with zones" : "without",
                     result.reason.c_str());
        return 1;
      }
      if (i < 2)
        continue; // the first two load, allocate and compute the reference
      const auto& reply = lanes[s]->last_reply();
      // Without loading the code object (a new file each time: its load time varies by
      // milliseconds from one file to the next, and the zones take no part in it).
      sides[s].host_ms.push_back(
          static_cast<double>(reply.setup_ns - reply.load_ns + reply.sampling_ns) / 1e6);
      sides[s].zones_ms.push_back(static_cast<double>(reply.red_zone_ns) / 1e6);
      std::vector<double> ns(result.samples_ns.begin(), result.samples_ns.end());
      sides[s].kernel_us.push_back(median(ns) / 1e3);
    }
  }
  const double with_ms = median(sides[0].host_ms);
  const double without_ms = median(sides[1].host_ms);
  std::printf("device: %s\n", with.device().name.c_str());
  std::printf("measurement: checked launch + %u timed launches, %u measurements per side\n", runs,
              measurements);
  std::printf("kernel median: %.2f us with zones, %.2f us without\n", median(sides[0].kernel_us),
              median(sides[1].kernel_us));
  std::printf("host time per measurement, its code object's load aside (median): %.3f ms with "
              "zones, %.3f ms without\n",
              with_ms, without_ms);
  std::printf("red zones' own host time (median): %.3f ms, %.2f %% of a measurement\n",
              median(sides[0].zones_ms), median(sides[0].zones_ms) / with_ms * 100.0);
  std::printf("overhead: %+.2f %% (target: at most 2 %%)\n", (with_ms / without_ms - 1.0) * 100.0);
  fs::remove_all(scratch);
  return 0;
}
