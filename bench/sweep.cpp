// bench/sweep: one space through the engine and through the plain serial loop (compile one, run it,
// next) with the same commands; prints both wall times, their ratio, and the ideal bound
// max(Σ compile / workers, Σ run). Targets (issue 2): engine ≤ 0.65 × serial, ≤ 1.15 × ideal, with
// 2 compile workers on a 2-core machine and a compile-dominated space.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "engine/autotune/autotune.hpp"
#include "stages/search/command_template.hpp"
#include "stages/search/space.hpp"
#include "stages/search/strategy.hpp"
#include "workers/process/child_process.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds(std::chrono::nanoseconds ns) {
  return std::chrono::duration<double>(ns).count();
}

struct serial_result {
  double wall_s = 0;
  double compile_s = 0;
  double run_s = 0;
  std::size_t candidates = 0;
};

/// The baseline: what a user's shell loop does, one candidate after another.
serial_result serial_loop(const rpl::engine::autotune_options& o) {
  const auto space = rpl::stages::load_space(o.space_file);
  const auto build = rpl::stages::command_template::parse(o.build_template, "--build-template");
  const auto cmd = rpl::stages::command_template::parse(o.cmd_template, "--cmd-template");
  auto strategy =
      rpl::stages::make_strategy(o.strategy, space.configurations.size(), o.budget, o.seed);
  char pattern[] = "/tmp/rpl-sweep-XXXXXX";
  const std::filesystem::path dir = mkdtemp(pattern);
  for (const auto& source : o.sources) {
    std::filesystem::copy_file(source, dir / source.filename());
  }
  serial_result r;
  const auto start = clock_type::now();
  while (auto index = strategy->next()) {
    auto values = space.configurations[*index].as_strings();
    const auto out = (dir / ("candidate-" + std::to_string(*index))).string();
    values["OUT"] = out;
    values["BIN"] = out;
    rpl::workers::child_options compile;
    compile.argv = build.expand(values);
    compile.cwd = dir;
    const auto built = rpl::workers::run_child(
        compile, std::chrono::milliseconds(static_cast<long>(o.compile_timeout_s * 1000)));
    r.compile_s += seconds(built.wall);
    ++r.candidates;
    if (!built.succeeded()) {
      continue;
    }
    rpl::workers::child_options run;
    run.argv = cmd.expand(values);
    for (std::uint32_t i = 0; i < o.warmup + o.runs; ++i) {
      const auto ran = rpl::workers::run_child(
          run, std::chrono::milliseconds(static_cast<long>(o.timeout_s * 1000)));
      r.run_s += seconds(ran.wall);
      if (!ran.succeeded()) {
        break;
      }
    }
  }
  r.wall_s = seconds(clock_type::now() - start);
  std::filesystem::remove_all(dir);
  return r;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/sweep: the engine against the plain serial loop on one space"};
  const std::filesystem::path root = RPL_SOURCE_ROOT;
  rpl::engine::autotune_options o;
  o.space_file = root / "examples/cpu/space.json";
  o.sources = {root / "examples/cpu/matmul.cpp"};
  o.build_template =
      "g++ -O2 -std=c++17 -DTILE_I={TILE_I} -DTILE_J={TILE_J} -DTILE_K={TILE_K} -DUNROLL={UNROLL} "
      "matmul.cpp -o {OUT}";
  o.cmd_template = "{BIN} --n 64"; // keeps the space compile-dominated
  o.runs = 3;
  o.warmup = 1;
  std::size_t budget = 24;
  std::size_t workers = 2;
  std::size_t repeat = 1;
  app.add_option("--space", o.space_file, "Space file");
  app.add_option("--source", o.sources, "Sources");
  app.add_option("--build-template", o.build_template, "Build template");
  app.add_option("--cmd-template", o.cmd_template, "Run template");
  app.add_option("--budget", budget, "Candidates (exhaustive order)");
  app.add_option("--workers", workers, "Compile workers");
  app.add_option("--runs", o.runs, "Timed runs");
  app.add_option("--warmup", o.warmup, "Warm-up runs");
  app.add_option("--repeat", repeat,
                 "Repetitions; ratios are reported per repetition and as medians")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  o.budget = budget;
  o.compile_workers = workers;
  o.lanes = 1;
  o.finalists = 0; // the sweep alone: the final round is extra measurement, not overhead
  // The workers are rocm-perf processes; this benchmark binary is not one.
  o.worker_executable = std::filesystem::canonical("/proc/self/exe").parent_path() / "rocm-perf";
  spdlog::set_level(spdlog::level::warn);

  std::printf(
      "bench/sweep: %zu candidates of %s, %zu compile workers, 1 lane, %u runs + %u warm-up, "
      "%u cores, %zu repetitions (serial loop and engine alternate)\n",
      budget, o.space_file.c_str(), workers, o.runs, o.warmup, std::thread::hardware_concurrency(),
      repeat);
  std::printf("build: %s\nrun:   %s\n", o.build_template.c_str(), o.cmd_template.c_str());
  std::fflush(stdout);
  auto cpu = [](const rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  std::vector<double> vs_serial;
  std::vector<double> vs_ideal;
  std::vector<double> vs_own_ideal;
  for (std::size_t rep = 0; rep < repeat; ++rep) {
    const auto serial = serial_loop(o);
    std::printf("[%zu] serial loop : %7.2f s  (Σ compile %.2f s, Σ run %.2f s, %zu candidates)\n",
                rep + 1, serial.wall_s, serial.compile_s, serial.run_s, serial.candidates);
    std::fflush(stdout);

    char pattern[] = "/tmp/rpl-sweep-db-XXXXXX";
    const std::filesystem::path dir = mkdtemp(pattern);
    o.db = dir / "sweep.db";
    std::atomic<bool> stop{false};
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    const auto start = clock_type::now();
    const auto result = rpl::engine::run_autotune(o, {}, stop);
    const double engine_s = seconds(clock_type::now() - start);
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    std::filesystem::remove_all(dir);
    const double ideal = std::max(serial.compile_s / static_cast<double>(workers), serial.run_s);
    std::printf(
        "[%zu] engine      : %7.2f s  (Σ compile %.2f s, Σ timed runs %.2f s, %zu completed, "
        "%zu invalid; engine threads' own CPU %.3f s)\n",
        rep + 1, engine_s, static_cast<double>(result.sum_compile_ns) / 1e9,
        static_cast<double>(result.sum_run_ns) / 1e9, result.counts.completed, result.counts.failed,
        cpu(after) - cpu(before));
    // The same bound from the engine's own compile and run times, which were taken under the
    // parallel load the engine itself creates; it is less sensitive to machine noise between
    // the two halves of a repetition.
    const double own_ideal =
        std::max(static_cast<double>(result.sum_compile_ns) / 1e9 / static_cast<double>(workers),
                 static_cast<double>(result.sum_run_ns) / 1e9);
    std::printf("[%zu] ideal bound : %7.2f s  = max(Σ compile / %zu, Σ run), serial loop's times "
                "(%.2f s from the engine's own times)\n",
                rep + 1, ideal, workers, own_ideal);
    std::printf("[%zu] engine/serial %.3f  engine/ideal %.3f  (engine/own-ideal %.3f)\n", rep + 1,
                engine_s / serial.wall_s, engine_s / ideal, engine_s / own_ideal);
    vs_own_ideal.push_back(engine_s / own_ideal);
    std::fflush(stdout);
    vs_serial.push_back(engine_s / serial.wall_s);
    vs_ideal.push_back(engine_s / ideal);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const auto n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
  };
  const double serial_ratio = median(vs_serial);
  const double ideal_ratio = median(vs_ideal);
  std::printf("median over %zu: engine / serial = %.3f  (target <= 0.65: %s)\n", repeat,
              serial_ratio, serial_ratio <= 0.65 ? "met" : "NOT met");
  std::printf("median over %zu: engine / ideal  = %.3f  (target <= 1.15: %s)\n", repeat,
              ideal_ratio, ideal_ratio <= 1.15 ? "met" : "NOT met");
  std::printf("median over %zu: engine / ideal from the engine's own times = %.3f\n", repeat,
              median(vs_own_ideal));
  return 0;
}
