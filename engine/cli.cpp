#include "engine/cli.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "engine/autotune.hpp"
#include "engine/commands/inspect_command.hpp"
#include "engine/commands/profile_command.hpp"
#include "stages/search/space.hpp"
#include "workers/compile/compile_worker.hpp"

namespace rpl::engine {

namespace {

std::atomic<bool> stop_requested{false};

void on_signal(int) {
  if (stop_requested.exchange(true)) {
    // A second signal means "now": restore the default action and re-raise.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    raise(SIGINT);
  }
}

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void setup_logging(bool quiet) {
  auto logger = spdlog::stderr_color_mt("rocm-perf");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(quiet ? spdlog::level::warn : spdlog::level::info);
}

std::string format_ms(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", ns / 1e6);
  return text;
}

std::string params_text(const nlohmann::json& params) {
  std::string text;
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!text.empty()) {
      text += ' ';
    }
    text += it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  }
  return text;
}

/// A one-line progress display on a terminal; plain log lines in a pipe.
class progress_printer {
public:
  progress_printer(bool interactive, bool quiet) : interactive_(interactive), quiet_(quiet) {}

  void operator()(const autotune_progress& p) {
    if (quiet_) {
      return;
    }
    const auto& c = *p.candidate;
    const auto done = p.counts.completed + p.counts.resumed + p.counts.duplicates;
    const double elapsed = std::chrono::duration<double>(p.elapsed).count();
    const double remaining_items =
        static_cast<double>(p.counts.planned > done ? p.counts.planned - done : 0);
    const double eta = p.counts.completed > 0
                           ? elapsed / static_cast<double>(p.counts.completed) * remaining_items
                           : 0.0;
    const std::string best =
        p.best ? format_ms(p.best->stats.median) + " ms (" + params_text(p.best->params) + ")" : "-";
    if (interactive_) {
      std::fprintf(stderr,
                   "\r\033[Kcompiled %zu  measured %zu  failed %zu  of %zu  best %s  ETA %.0f s",
                   p.counts.compiled, p.counts.measured, p.counts.failed, p.counts.planned,
                   best.c_str(), eta);
      std::fflush(stderr);
      printed_line_ = true;
    } else {
      const std::string outcome =
          c.verdict.decision == messages::verdict_kind::invalid
              ? "invalid: " + c.verdict.reason
              : std::string(messages::to_string(c.verdict.decision)) + " median " +
                    format_ms(c.stats.median) + " ms cv " + std::to_string(c.stats.cv).substr(0, 5);
      spdlog::info("[{}/{}] {} {}: {}", done, p.counts.planned, c.key.substr(0, 12),
                   params_text(c.config.to_json()), outcome);
    }
  }

  void finish() {
    if (printed_line_) {
      std::fprintf(stderr, "\n");
    }
  }

private:
  bool interactive_;
  bool quiet_;
  bool printed_line_ = false;
};

void print_table(const autotune_result& result) {
  std::vector<const stored_candidate*> valid;
  std::size_t invalid = 0;
  for (const auto& c : result.candidates) {
    if (c.status == "ok") {
      valid.push_back(&c);
    } else {
      ++invalid;
    }
  }
  std::sort(valid.begin(), valid.end(),
            [](const auto* a, const auto* b) { return a->stats.median < b->stats.median; });
  std::printf("\nrun %s (%s): %zu configurations (%zu cut by constraints), %zu completed, %zu "
              "invalid, %.1f s, %zu compile workers, %zu lanes\n",
              result.run_id.c_str(), result.run_status.c_str(), result.space_size,
              result.cut_by_constraints, result.candidates.size(), invalid, result.wall_s,
              result.compile_workers, result.lanes);
  std::printf("%-4s %12s %12s %8s %-9s %s\n", "rank", "median ms", "min ms", "cv", "stability",
              "parameters");
  for (std::size_t i = 0; i < valid.size() && i < 10; ++i) {
    const auto& c = *valid[i];
    std::printf("%-4zu %12s %12s %8.4f %-9s %s%s\n", i + 1, format_ms(c.stats.median).c_str(),
                format_ms(c.stats.min).c_str(), c.stats.cv, stages::to_string(c.stats.stability),
                params_text(c.params).c_str(), c.key == result.winner_key ? "  <- winner" : "");
  }
  std::size_t listed = 0;
  for (const auto& c : result.candidates) {
    if (c.status == "ok") {
      continue;
    }
    if (listed++ == 0) {
      std::printf("\ninvalid candidates:\n");
    }
    if (listed > 10) {
      std::printf("  ... and %zu more (sqlite3 %s \"SELECT params_json, reason FROM candidates "
                  "WHERE status='invalid'\")\n",
                  invalid - 10, result.db.c_str());
      break;
    }
    std::printf("  %s: %s\n", params_text(c.params).c_str(), c.reason.c_str());
  }
  for (const auto& c : result.candidates) {
    if (c.key == result.winner_key) {
      std::printf("\nwinner: %s  median %s ms (cv %.4f, %s, n=%zu)  key %s\n",
                  params_text(c.params).c_str(), format_ms(c.stats.median).c_str(), c.stats.cv,
                  stages::to_string(c.stats.stability), c.stats.n, c.key.c_str());
    }
  }
  if (!valid.empty() && !result.winner_key.empty() && valid.front()->key != result.winner_key) {
    std::printf("note: candidates above the winner have a lower median, but the difference lies "
                "inside the noise band (verdict same or ambiguous); more --runs can separate them\n");
  }
  if (result.winner_key.empty()) {
    std::printf("\nno winner: no candidate produced a valid measurement\n");
  }
}

int autotune_main(const autotune_options& options, bool json, bool quiet) {
  install_signal_handlers();
  const bool interactive = isatty(STDERR_FILENO) != 0 && !json;
  progress_printer printer(interactive, quiet);
  autotune_result result;
  try {
    result = run_autotune(
        options, [&printer](const autotune_progress& p) { printer(p); }, stop_requested);
  } catch (const config_error& error) {
    printer.finish();
    std::fprintf(stderr, "rocm-perf autotune: error: %s\n", error.what());
    return 2;
  } catch (const store_error& error) {
    printer.finish();
    std::fprintf(stderr, "rocm-perf autotune: error: %s\n", error.what());
    return 2;
  }
  printer.finish();
  if (json) {
    std::cout << to_json(result).dump(2) << std::endl;
  } else if (quiet) {
    for (const auto& c : result.candidates) {
      if (c.key == result.winner_key) {
        std::printf("%s\n", format_ms(c.stats.median).c_str());
      }
    }
  } else {
    print_table(result);
  }
  if (result.run_status == "failed") {
    std::fprintf(stderr, "rocm-perf autotune: error: %s\n", result.error.c_str());
    return 1;
  }
  if (result.run_status == "interrupted") {
    std::fprintf(stderr, "rocm-perf autotune: interrupted; continue with --resume --db %s\n",
                 result.db.c_str());
    return 130;
  }
  if (result.winner_key.empty()) {
    if (!json && quiet) {
      std::fprintf(stderr, "rocm-perf autotune: no candidate produced a valid measurement\n");
    }
    return 3;
  }
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"rocm-perf: a performance lab for GPU kernels"};
  app.set_version_flag("--version", std::string("rocm-perf ") + RPL_VERSION);
  app.require_subcommand(1);

  autotune_options options;
  bool json = false;
  bool quiet = false;
  std::int64_t heartbeat_ms = 1000;
  std::size_t budget = 0;
  std::size_t workers = 0;
  std::size_t in_flight = 0;
  auto* autotune = app.add_subcommand("autotune", "Find the fastest configuration of a kernel");
  autotune->add_option("--space", options.space_file, "Space file (JSON)")->required();
  autotune->add_option("--build-template", options.build_template,
                       "Build command; {NAME} parameters, {OUT} artifact path")
      ->required();
  autotune->add_option("--cmd-template", options.cmd_template,
                       "Run command; {NAME} parameters, {BIN} artifact path")
      ->required();
  autotune->add_option("--source", options.sources, "Source file shipped to the compile workers");
  autotune->add_option("--strategy", options.strategy, "exhaustive | random")
      ->check(CLI::IsMember({"exhaustive", "random"}));
  auto* budget_opt = autotune->add_option("--budget", budget, "At most N candidates")
                         ->check(CLI::PositiveNumber);
  autotune->add_option("--seed", options.seed, "Seed of the random strategy");
  auto* workers_opt = autotune->add_option(
      "--compile-workers", workers, "Local compile worker processes (default: cores - lanes, >= 1)");
  autotune->add_option("--listen", options.listen,
                       "Also accept compile workers on this endpoint, e.g. tcp://0.0.0.0:5555");
  autotune->add_option("--lanes", options.lanes, "Measurement lanes (CPU slots for timing)");
  autotune->add_option("--runs", options.runs, "Timed runs per candidate");
  autotune->add_option("--warmup", options.warmup, "Untimed runs before the timed ones");
  autotune->add_option("--timeout", options.timeout_s, "Per-run timeout, seconds");
  autotune->add_option("--compile-timeout", options.compile_timeout_s,
                       "Per-compile deadline, seconds");
  autotune->add_option("--db", options.db, "Results database (SQLite)");
  autotune->add_flag("--resume", options.resume, "Continue the matching run in --db");
  autotune->add_flag("--json", json, "Print the result as JSON (docs/schema/autotune.schema.json)");
  autotune->add_flag("--quiet", quiet, "Print only the winner's median runtime in ms");
  autotune->add_option("--allow-compiler", options.allowed_compilers,
                       "Compilers the local workers may run (replaces the default list)");
  autotune->add_option("--heartbeat-ms", heartbeat_ms, "Broker heartbeat interval")
      ->check(CLI::Range(10, 60000));
  autotune->add_option("--liveness", options.liveness, "Missed heartbeats before a worker is dead")
      ->check(CLI::Range(1, 100));
  auto* in_flight_opt = autotune->add_option("--max-in-flight", in_flight,
                                             "Candidates in flight (default 2 x (workers + lanes))")
                            ->check(CLI::PositiveNumber);

  profile_options profile_opts;
  auto* profile = app.add_subcommand(
      "profile", "Run an application under a tracer and report its kernels: runtime, stability, "
                 "resources, occupancy");
  profile->add_option("--backend", profile_opts.backend,
                      "rocm (rocprofv3) | cuda (CUPTI tracer) | timing | auto")
      ->check(CLI::IsMember({"rocm", "cuda", "timing", "auto"}));
  profile->add_option("--tracer", profile_opts.tracer, "CUPTI tracer library for --backend cuda");
  profile->add_option("--runs", profile_opts.runs, "Runs of the application");
  profile->add_flag("--json", profile_opts.report.json, "Print strict JSON (docs/schema/profile.schema.json)");
  profile->add_flag("--quiet", profile_opts.report.quiet, "Print only the runtime in ms");
  profile->add_flag("--debug", profile_opts.debug, "Show rocprofv3's own output; keep its traces");
  profile->add_flag("--no-rocprof", profile_opts.no_rocprof,
                    "Timing backend: whole-process wall time, no per-kernel data");
  profile->add_option("--out", profile_opts.report.out, "Write profile.json (and the traces) here");
  profile->add_option("--arch", profile_opts.report.arch, "Target for occupancy (default: the agent's)");
  profile->add_option("--rocprofv3", profile_opts.rocprofv3, "rocprofv3 executable (default: PATH)");
  profile->add_option("--timeout", profile_opts.timeout_s, "Per-run timeout, seconds (0: none)");
  profile->add_option("app", profile_opts.app, "-- APP [ARGS...]")->expected(-1);

  analyze_options analyze_opts;
  auto* analyze = app.add_subcommand("analyze", "Analyze rocpd databases recorded elsewhere");
  analyze->add_option("databases", analyze_opts.inputs, "rocpd databases or folders of them")
      ->expected(-1);
  analyze->add_flag("--per-run", analyze_opts.per_run,
                    "Each argument is one run (for stability across runs)");
  analyze->add_flag("--json", analyze_opts.report.json, "Print strict JSON");
  analyze->add_flag("--quiet", analyze_opts.report.quiet, "Print only the runtime in ms");
  analyze->add_option("--out", analyze_opts.report.out, "Write profile.json here");
  analyze->add_option("--arch", analyze_opts.report.arch, "Target for occupancy (default: the agent's)");

  inspect_options inspect_opts;
  std::uint32_t inspect_block = 0;
  auto* inspect = app.add_subcommand(
      "inspect", "Kernels of a code object, executable or shared library: resources and occupancy");
  inspect->add_option("files", inspect_opts.files, "Code objects, executables, shared libraries")
      ->expected(-1);
  inspect->add_option("--arch", inspect_opts.arch, "Target (default: the embedded one)");
  auto* block_opt = inspect->add_option("--block", inspect_block, "Also at this block size")
                        ->check(CLI::Range(1, 65536));
  inspect->add_flag("--json", inspect_opts.json, "Print JSON");

  workers::compile_worker_options worker_options;
  bool worker_quiet = false;
  std::int64_t worker_heartbeat_ms = 1000;
  std::int64_t reconnect_ms = 1000;
  std::int64_t reconnect_max_ms = 32000;
  std::vector<std::string> worker_compilers;
  auto* worker = app.add_subcommand("worker", "Run a worker process");
  worker->require_subcommand(1);
  auto* compile = worker->add_subcommand("compile", "Compile worker serving an engine");
  compile->add_option("--connect", worker_options.endpoint, "Engine endpoint")->required();
  compile->add_option("--heartbeat-ms", worker_heartbeat_ms, "Heartbeat interval")
      ->check(CLI::Range(10, 60000));
  compile->add_option("--liveness", worker_options.liveness, "Missed heartbeats before reconnecting")
      ->check(CLI::Range(1, 100));
  compile->add_option("--reconnect-ms", reconnect_ms, "First reconnect back-off");
  compile->add_option("--reconnect-max-ms", reconnect_max_ms, "Largest reconnect back-off");
  compile->add_option("--allow-compiler", worker_compilers,
                      "Allowed compiler (repeatable; replaces the default list)");
  compile->add_option("--work-dir", worker_options.work_root, "Where job folders are created");
  compile->add_flag("--keep-temp", worker_options.keep_temp, "Keep job folders (debugging)");
  compile->add_flag("--quiet", worker_quiet, "Log warnings and errors only");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }

  if (autotune->parsed()) {
    setup_logging(quiet || json);
    if (*budget_opt) {
      options.budget = budget;
    }
    if (*workers_opt) {
      options.compile_workers = workers;
    }
    if (*in_flight_opt) {
      options.max_in_flight = in_flight;
    }
    options.heartbeat = std::chrono::milliseconds(heartbeat_ms);
    try {
      return autotune_main(options, json, quiet);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "rocm-perf autotune: error: %s\n", error.what());
      return 1;
    }
  }
  if (profile->parsed()) {
    setup_logging(true);
    return profile_main(profile_opts);
  }
  if (analyze->parsed()) {
    setup_logging(true);
    return analyze_main(analyze_opts);
  }
  if (inspect->parsed()) {
    setup_logging(true);
    if (*block_opt) {
      inspect_opts.block = inspect_block;
    }
    return inspect_main(inspect_opts);
  }
  if (compile->parsed()) {
    setup_logging(worker_quiet);
    worker_options.heartbeat = std::chrono::milliseconds(worker_heartbeat_ms);
    worker_options.reconnect_initial = std::chrono::milliseconds(reconnect_ms);
    worker_options.reconnect_max = std::chrono::milliseconds(reconnect_max_ms);
    if (!worker_compilers.empty()) {
      worker_options.allowed_compilers = worker_compilers;
    }
    install_signal_handlers();
    try {
      return workers::run_compile_worker(worker_options, stop_requested);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "rocm-perf worker compile: error: %s\n", error.what());
      return 2;
    }
  }
  return 0;
}

}  // namespace rpl::engine
