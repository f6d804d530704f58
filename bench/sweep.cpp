// bench/sweep: one space through the engine and through the plain serial loop (compile one, run it,
// next) with the same commands; prints both wall times, their ratio, and the ideal bound
// max(Σ compile / workers, Σ run). Targets (issue 2): engine ≤ 0.65 × serial, ≤ 1.15 × ideal, with
// 2 compile workers on a 2-core machine and a compile-dominated space.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "engine/autotune.hpp"
#include "stages/command_template.hpp"
#include "stages/space.hpp"
#include "stages/strategy.hpp"
#include "workers/child_process.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds(std::chrono::nanoseconds ns) { return std::chrono::duration<double>(ns).count(); }

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
  auto strategy = rpl::stages::make_strategy(o.strategy, space.configurations.size(), o.budget, o.seed);
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
    const auto built = rpl::workers::run_child(compile, std::chrono::milliseconds(
                                                            static_cast<long>(o.compile_timeout_s * 1000)));
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/sweep: the engine against the plain serial loop on one space"};
  const std::filesystem::path root = RPL_SOURCE_ROOT;
  rpl::engine::autotune_options o;
  o.space_file = root / "examples/cpu/space.json";
  o.sources = {root / "examples/cpu/matmul.cpp"};
  o.build_template =
      "g++ -O2 -std=c++17 -DTILE_I={TILE_I} -DTILE_J={TILE_J} -DTILE_K={TILE_K} -DUNROLL={UNROLL} "
      "matmul.cpp -o {OUT}";
  o.cmd_template = "{BIN} --n 128";
  o.runs = 3;
  o.warmup = 1;
  std::size_t budget = 24;
  std::size_t workers = 2;
  app.add_option("--space", o.space_file, "Space file");
  app.add_option("--source", o.sources, "Sources");
  app.add_option("--build-template", o.build_template, "Build template");
  app.add_option("--cmd-template", o.cmd_template, "Run template");
  app.add_option("--budget", budget, "Candidates (exhaustive order)");
  app.add_option("--workers", workers, "Compile workers");
  app.add_option("--runs", o.runs, "Timed runs");
  app.add_option("--warmup", o.warmup, "Warm-up runs");
  CLI11_PARSE(app, argc, argv);
  o.budget = budget;
  o.compile_workers = workers;
  o.lanes = 1;
  spdlog::set_level(spdlog::level::warn);

  std::printf("bench/sweep: %zu candidates of %s, %zu compile workers, 1 lane, %u runs + %u warm-up, "
              "%u cores\n",
              budget, o.space_file.c_str(), workers, o.runs, o.warmup,
              std::thread::hardware_concurrency());
  std::fflush(stdout);
  const auto serial = serial_loop(o);
  std::printf("serial loop : %8.2f s  (Σ compile %.2f s, Σ run %.2f s, %zu candidates)\n",
              serial.wall_s, serial.compile_s, serial.run_s, serial.candidates);
  std::fflush(stdout);

  char pattern[] = "/tmp/rpl-sweep-db-XXXXXX";
  const std::filesystem::path dir = mkdtemp(pattern);
  o.db = dir / "sweep.db";
  std::atomic<bool> stop{false};
  const auto start = clock_type::now();
  const auto result = rpl::engine::run_autotune(o, {}, stop);
  const double engine_s = seconds(clock_type::now() - start);
  std::filesystem::remove_all(dir);
  std::printf("engine      : %8.2f s  (Σ compile %.2f s, Σ timed runs %.2f s, %zu completed, %zu "
              "invalid)\n",
              engine_s, static_cast<double>(result.sum_compile_ns) / 1e9,
              static_cast<double>(result.sum_run_ns) / 1e9, result.counts.completed,
              result.counts.failed);
  const double ideal = std::max(serial.compile_s / static_cast<double>(workers), serial.run_s);
  const double vs_serial = engine_s / serial.wall_s;
  const double vs_ideal = engine_s / ideal;
  std::printf("ideal bound : %8.2f s  = max(Σ compile / %zu, Σ run) from the serial loop's times\n",
              ideal, workers);
  std::printf("engine / serial = %.3f  (target <= 0.65: %s)\n", vs_serial,
              vs_serial <= 0.65 ? "met" : "NOT met");
  std::printf("engine / ideal  = %.3f  (target <= 1.15: %s)\n", vs_ideal,
              vs_ideal <= 1.15 ? "met" : "NOT met");
  return 0;
}
