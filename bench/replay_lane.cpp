// bench/replay_lane: what a paired round costs on the long-lived replay lane against the kernel
// lane, on the same kernel and sizes (issue 37's goal: at most 1.5x). A paired round is what
// optimize's comparison asks of a lane per round (engine/optimize/journey_context.cpp): the
// incumbent's and the challenger's measurements, each --runs timed launches after one warm-up with
// one spot-checked launch among them. Both lanes run on one GPU, one after the other: first the
// kernel lane (a launch file), then the served replay lane (`rpl-replay-cuda --serve` on a
// capture made by `rocm-perf isolate`), then, for the figure before issue 37, --legacy-rounds
// rounds on the per-measurement replay lane (one rpl-replay-cuda process per measurement). Each
// lane's first two rounds (process start, loads, checked launches) are left out of the medians
// and reported apart. Prints each lane's median round wall time, its kernel median, and the
// ratios. Needs an NVIDIA GPU.
//
//   bench/replay_lane --code-object pl_scale.cubin --launch pl_scale_app.launch.json
//       --capture captures/pl_scale [--rounds 30] [--legacy-rounds 3]

#include "workers/lanes/replay/replay_lane.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "stages/search/launch_spec.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/lanes/replay/served_replay_lane.hpp"
#include "workers/replay/replay_run.hpp"

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct lane_figures {
  std::string name;
  double first_two_ms = 0;       ///< the first two rounds together (start, loads, checks)
  std::vector<double> round_ms;  ///< later rounds
  std::vector<double> kernel_us; ///< each measurement's median sample
  std::vector<double> setup_ms, sampling_ms, check_ms,
      zones_ms;           ///< the lane process's own host times
  bool had_zones = false; ///< whether the lane process had red zones to check
  std::string error;
};

using reply_source = std::function<const rpl::messages::kernel_lane_reply*()>;

/// `rounds` paired rounds of `a` and `b` on `lane`; `reply` gives the lane process's last reply,
/// where it has one.
lane_figures paired_rounds(const std::string& name,
                           rpl::workers::lane_backend& lane,
                           const reply_source& reply,
                           rpl::messages::measure_request request,
                           const std::string& a,
                           const std::string& b,
                           std::uint32_t rounds) {
  lane_figures out;
  out.name = name;
  for (std::uint32_t r = 0; r < rounds && out.error.empty(); ++r) {
    const auto start = clock_type::now();
    for (const auto& code : {a, b}) {
      request.argv[0] = code;
      request.candidate_key = code + "#" + std::to_string(r);
      const auto result = lane.measure(request);
      if (result.status != rpl::messages::measure_status::ok) {
        out.error = result.reason;
        break;
      }
      std::vector<double> ns(result.samples_ns.begin(), result.samples_ns.end());
      out.kernel_us.push_back(median(ns) / 1e3);
      if (const auto* got = reply ? reply() : nullptr; got != nullptr && r >= 2) {
        out.setup_ms.push_back(static_cast<double>(got->setup_ns) / 1e6);
        out.sampling_ms.push_back(static_cast<double>(got->sampling_ns) / 1e6);
        out.check_ms.push_back(static_cast<double>(got->check_ns + got->red_zone_ns) / 1e6);
        out.zones_ms.push_back(static_cast<double>(got->red_zone_ns) / 1e6);
        out.had_zones = got->red_zones;
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
    if (r < 2)
      out.first_two_ms += ms;
    else
      out.round_ms.push_back(ms);
  }
  return out;
}

void print(const lane_figures& f) {
  if (!f.error.empty()) {
    std::printf("%-28s failed: %s\n", f.name.c_str(), f.error.c_str());
    return;
  }
  std::printf("%-28s round %.2f ms (median of %zu; first two rounds %.1f ms), kernel %.2f us\n",
              f.name.c_str(), median(f.round_ms), f.round_ms.size(), f.first_two_ms,
              median(f.kernel_us));
  if (!f.setup_ms.empty())
    std::printf("%-28s per measurement in the lane process: setup %.2f ms, sampling %.2f ms "
                "(checks and red zones %.2f ms, of which red zones %.3f ms%s)\n",
                "", median(f.setup_ms), median(f.sampling_ms), median(f.check_ms),
                median(f.zones_ms), f.had_zones ? "" : ": this lane had none");
}

/// --check: one candidate on the long-lived replay lane, as optimize's validation asks (one
/// checked launch, one timed launch).
int check_candidate(const std::string& capture,
                    const std::string& code,
                    const std::string& symbol) {
  const auto program = rpl::workers::replay::find_cuda_replay_program();
  if (!program) {
    std::fprintf(stderr, "replay_lane: rpl-replay-cuda not found (RPL_REPLAY_CUDA)\n");
    return 2;
  }
  rpl::workers::served_replay_lane_options o;
  o.name = "replay";
  o.capture = capture;
  o.program = *program;
  rpl::workers::served_replay_lane lane(o);
  rpl::messages::measure_request request;
  request.argv = {code};
  if (!symbol.empty())
    request.argv.push_back(symbol);
  request.runs = 1;
  request.timeout_ms = 60000;
  request.fixed_count = true;
  const auto result = lane.measure(request);
  std::printf("candidate %s: %s, finding '%s'\n  %s\n", code.c_str(),
              rpl::messages::to_string(result.status), result.finding.c_str(),
              result.reason.c_str());
  return result.status == rpl::messages::measure_status::ok ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/replay_lane: a paired round on the replay lane against the kernel lane"};
  std::string code_object;
  std::string launch_path;
  std::string capture;
  std::uint32_t rounds = 30;
  std::uint32_t legacy_rounds = 3;
  std::uint32_t runs = 5;
  std::string check_code;
  std::string check_symbol;
  app.add_option("--check", check_code,
                 "instead: measure this one candidate's cubin on the long-lived replay lane and "
                 "print its status, finding and reason (exit 0 when it is refused)");
  app.add_option("--symbol", check_symbol, "--check's kernel symbol (default: the captured one)");
  app.add_option("--code-object", code_object, "the kernel's cubin");
  app.add_option("--launch", launch_path, "its launch file, sized as the capture");
  app.add_option("--capture", capture, "a capture of the same kernel (rocm-perf isolate)")
      ->required();
  app.add_option("--rounds", rounds, "paired rounds per lane (default 30)");
  app.add_option("--legacy-rounds", legacy_rounds,
                 "paired rounds on the per-measurement replay lane (default 3; 0: none)");
  app.add_option("--runs", runs, "timed launches per measurement (default 5, optimize's)");
  CLI11_PARSE(app, argc, argv);

  if (!check_code.empty())
    return check_candidate(capture, check_code, check_symbol);
  if (code_object.empty() || launch_path.empty()) {
    std::fprintf(stderr, "replay_lane: --code-object and --launch are needed (or --check)\n");
    return 2;
  }
  const auto resolved = rpl::stages::resolve_launch(rpl::stages::load_launch_spec(launch_path), {});
  if (!resolved.ok()) {
    std::fprintf(stderr, "replay_lane: %s\n", resolved.error.c_str());
    return 2;
  }
  const auto program = rpl::workers::replay::find_cuda_replay_program();
  if (!program) {
    std::fprintf(stderr, "replay_lane: rpl-replay-cuda not found (RPL_REPLAY_CUDA)\n");
    return 2;
  }
  const fs::path scratch = fs::temp_directory_path() / "rpl-replay-lane-bench";
  fs::create_directories(scratch);
  const std::string a = (scratch / "incumbent.cubin").string();
  const std::string b = (scratch / "challenger.cubin").string();
  fs::copy_file(code_object, a, fs::copy_options::overwrite_existing);
  fs::copy_file(code_object, b, fs::copy_options::overwrite_existing);

  rpl::messages::measure_request request;
  request.argv = {a};
  request.runs = runs;
  request.warmup = 1;
  request.timeout_ms = 60000;
  request.fixed_count = true;
  request.spot_checks = 1;

  std::vector<lane_figures> figures;
  {
    rpl::workers::kernel_lane_options o;
    o.name = "kernel";
    rpl::workers::kernel_lane lane(o);
    auto with_launch = request;
    with_launch.launch = *resolved.launch;
    figures.push_back(paired_rounds(
        "kernel lane", lane, [&] { return &lane.last_reply(); }, with_launch, a, b, rounds));
  }
  {
    rpl::workers::served_replay_lane_options o;
    o.name = "replay";
    o.capture = capture;
    o.program = *program;
    rpl::workers::served_replay_lane lane(o);
    figures.push_back(paired_rounds(
        "replay lane (long-lived)", lane, [&] { return &lane.last_reply(); }, request, a, b,
        rounds));
  }
  if (legacy_rounds > 0) {
    rpl::workers::replay_lane_options o;
    o.name = "legacy";
    o.capture = capture;
    o.program = *program;
    rpl::workers::replay_lane lane(o);
    figures.push_back(
        paired_rounds("replay lane (per process)", lane, {}, request, a, b, legacy_rounds + 2));
  }
  std::printf("paired round: 2 measurements of %u timed launches after 1 warm-up, 1 spot check\n",
              runs);
  for (const auto& f : figures)
    print(f);
  if (figures[0].error.empty() && figures[1].error.empty()) {
    const double kernel_ms = median(figures[0].round_ms);
    std::printf("replay lane / kernel lane, per paired round: %.2fx (goal: at most 1.5x)\n",
                median(figures[1].round_ms) / kernel_ms);
    if (figures.size() > 2 && figures[2].error.empty())
      std::printf("per-process replay lane / kernel lane: %.2fx\n",
                  median(figures[2].round_ms) / kernel_ms);
  }
  fs::remove_all(scratch);
  return figures[0].error.empty() && figures[1].error.empty() ? 0 : 1;
}
