// bench/overhead: the engine's own cost per candidate. Build and run commands are `true`, so what
// remains is the engine: the graph, the broker round trip to a worker process, the lane hand-off,
// statistics, acceptance and one SQLite transaction per candidate. Baseline: the same processes
// spawned by a plain loop. Target (issue 2): under 5 ms per candidate.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "engine/autotune/autotune.hpp"
#include "workers/process/child_process.hpp"

namespace {
using clock_type = std::chrono::steady_clock;
double seconds(clock_type::duration d) {
  return std::chrono::duration<double>(d).count();
}
} // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/overhead: engine cost per candidate with trivial build and run commands"};
  std::size_t candidates = 200;
  app.add_option("--candidates", candidates, "Candidates");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  char pattern[] = "/tmp/rpl-overhead-XXXXXX";
  const std::filesystem::path dir = mkdtemp(pattern);
  {
    std::ofstream space(dir / "space.json");
    space << R"({"params": {"I": [)";
    for (std::size_t i = 0; i < candidates; ++i) {
      space << (i ? "," : "") << i;
    }
    space << "]}}";
  }

  // Baseline: spawn the same two processes per candidate, one after another.
  rpl::workers::child_options trivial;
  trivial.argv = {"true"};
  const auto base_start = clock_type::now();
  for (std::size_t i = 0; i < candidates; ++i) {
    (void)rpl::workers::run_child(trivial, std::chrono::seconds(10));
    (void)rpl::workers::run_child(trivial, std::chrono::seconds(10));
  }
  const double baseline_s = seconds(clock_type::now() - base_start);

  auto run = [&](std::size_t in_flight, const char* name) {
    rpl::engine::autotune_options o;
    o.space_file = dir / "space.json";
    o.build_template = "true {I}";
    o.cmd_template = "true {I}";
    o.allowed_compilers = {"true"};
    o.compile_workers = 1;
    o.lanes = 1;
    o.finalists = 0; // the sweep alone: the final round is extra measurement, not overhead
    o.runs = 1;
    o.warmup = 0;
    o.max_in_flight = in_flight;
    o.worker_executable = std::filesystem::canonical("/proc/self/exe").parent_path() / "rocm-perf";
    o.db = dir / (std::string(name) + ".db");
    std::vector<clock_type::time_point> done;
    double latency_s = 0, compile_child_s = 0, run_child_s = 0;
    std::atomic<bool> stop{false};
    const auto start = clock_type::now();
    const auto result = rpl::engine::run_autotune(
        o,
        [&](const rpl::engine::autotune_progress& p) {
          done.push_back(clock_type::now());
          latency_s += seconds(done.back() - p.candidate->submitted_at);
          compile_child_s += static_cast<double>(p.candidate->compile.compile_ns) / 1e9;
          for (auto ns : p.candidate->measure.samples_ns) {
            run_child_s += static_cast<double>(ns) / 1e9;
          }
        },
        stop);
    const double wall = seconds(clock_type::now() - start);
    // Steady state: from the first completion to the last, so start-up is reported apart.
    const double steady =
        seconds(done.back() - done.front()) / static_cast<double>(done.size() - 1);
    const double startup = seconds(done.front() - start);
    const double per_candidate_baseline = baseline_s / static_cast<double>(candidates);
    std::printf("%-26s wall %6.2f s  start-up %6.1f ms  %6.2f ms/candidate  engine overhead "
                "%6.2f ms/candidate  (%zu completed)\n",
                name, wall, startup * 1e3, steady * 1e3, (steady - per_candidate_baseline) * 1e3,
                result.counts.completed);
    const double n = static_cast<double>(done.size());
    std::printf("%-26s per candidate: submit-to-stored %.2f ms = compiler process %.2f ms + run "
                "process %.2f ms + engine %.2f ms\n",
                "", latency_s / n * 1e3, compile_child_s / n * 1e3, run_child_s / n * 1e3,
                (latency_s - compile_child_s - run_child_s) / n * 1e3);
    return steady - per_candidate_baseline;
  };

  std::printf(
      "bench/overhead: %zu candidates, build `true`, run `true`, 1 worker, 1 lane, %u cores\n",
      candidates, std::thread::hardware_concurrency());
  std::printf("%-26s wall %6.2f s                     %6.2f ms/candidate  (2 process spawns)\n",
              "baseline (plain loop)", baseline_s,
              baseline_s / static_cast<double>(candidates) * 1e3);
  const double serial_overhead = run(1, "engine, 1 in flight");
  run(4, "engine, 4 in flight");
  std::filesystem::remove_all(dir);
  std::printf(
      "engine overhead per candidate (1 in flight, latency) = %.2f ms (target < 5 ms: %s)\n",
      serial_overhead * 1e3, serial_overhead < 0.005 ? "met" : "NOT met");
  return 0;
}
