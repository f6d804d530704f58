#include "engine/autotune/autotune.hpp"

#include <cstdio>
#include <iostream>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "engine/commands/autotune_output.hpp"
#include "engine/commands/command.hpp"

namespace rpl::engine::commands {

namespace {

int run_autotune_verb(const autotune_options& options, bool json, bool quiet) {
  install_signal_handlers("rocm-perf autotune: stopping (a second Ctrl-C or SIGTERM exits at "
                          "once)\n");
  const bool interactive = isatty(STDERR_FILENO) != 0 && !json;
  progress_printer printer(interactive, quiet);
  autotune_result result;
  try {
    result = run_autotune(
        options, [&printer](const autotune_progress& p) { printer(p); }, stop_requested());
  } catch (const campaign_input_error& error) { // config_error, and the shared inputs' errors
    printer.finish();
    std::fprintf(stderr, "rocm-perf autotune: error: %s\n", error.what());
    return bad_input;
  } catch (const store_error& error) {
    printer.finish();
    std::fprintf(stderr, "rocm-perf autotune: error: %s\n", error.what());
    return bad_input;
  }
  printer.finish();
  if (json) {
    std::cout << to_json(result).dump(2) << std::endl;
    spdlog::debug("autotune: JSON written");
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
    return run_failed;
  }
  if (result.run_status == "interrupted") {
    std::fprintf(stderr, "rocm-perf autotune: interrupted; continue with --resume --db %s\n",
                 result.db.c_str());
    return interrupted;
  }
  if (result.winner_key.empty()) {
    if (!json && quiet) {
      std::fprintf(stderr, "rocm-perf autotune: no candidate produced a valid measurement\n");
    }
    return no_result;
  }
  return done;
}

class autotune_command final : public command {
public:
  void add_to(CLI::App& app) override {
    auto* cmd = app.add_subcommand("autotune", "Find the fastest configuration of a kernel");
    cmd_ = cmd;
    cmd->add_option("--space", options_.space_file, "Space file (JSON)");
    cmd->add_option("--recorded", options_.recorded,
                    "Search a recorded landscape (Kernel Tuner cache, .json or .json.gz) instead: "
                    "every measurement answered from it, nothing compiled or run");
    cmd->add_option("--build-template", options_.build_template,
                    "Build command; {NAME} parameters, {OUT} artifact path (required without "
                    "--recorded)");
    cmd->add_option("--cmd-template", options_.cmd_template,
                    "Run command; {NAME} parameters, {BIN} artifact path. Required for the "
                    "timing and application lanes; optional with --launch and --replay (default "
                    "{BIN}, the code object), not with --recorded");
    cmd->add_option("--source", options_.sources, "Source file shipped to the compile workers");
    cmd->add_option("--strategy", options_.strategy,
                    "exhaustive | random | model (a surrogate fitted as results come in)")
        ->check(CLI::IsMember({"exhaustive", "random", "model"}));
    budget_opt_ =
        cmd->add_option("--budget", budget_, "At most N candidates")->check(CLI::PositiveNumber);
    cmd->add_option("--seed", options_.seed, "Seed of the random and model strategies");
    cmd->add_option("--seed-fraction", options_.seed_fraction,
                    "--strategy model: the random seed sample, a fraction of the space, at least "
                    "twice the parameters' linear features (default: twice them, at most half "
                    "the budget)");
    cmd->add_option("--confirm-fraction", options_.confirm_fraction,
                    "--strategy model: the confirm phase at the end, a fraction of the budget "
                    "(default 0.1)");
    workers_opt_ = cmd->add_option("--compile-workers", workers_,
                                   "Local compile worker processes (default: cores - lanes, >= 1)");
    cmd->add_option("--listen", options_.listen,
                    "Also accept compile workers on this endpoint, e.g. tcp://0.0.0.0:5555");
    cmd->add_option("--curve-keys", options_.curve_keys,
                    "With --listen: the engine's CURVE key pair folder (rocm-perf keys generate); "
                    "remote workers must then authenticate");
    cmd->add_option("--allow-keys", options_.allow_keys,
                    "With --curve-keys: the workers' public keys admitted, one per line "
                    "(KEY [name])");
    cmd->add_flag("--no-compile-cache", options_.no_compile_cache,
                  "Compile every candidate even when the artifact cache (<db>.artifacts) holds "
                  "its build");
    cmd->add_flag("--insecure", options_.insecure,
                  "Allow --listen without CURVE keys on any transport (tcp, loopback "
                  "included, ws, abstract ipc); without it only an ipc:// path in a folder of "
                  "mode 0700 needs no keys (trusted hosts and networks only)");
    worker_wait_opt_ = cmd->add_option(
        "--worker-wait", worker_wait_s_,
        "Fail the run (exit 1) once compiles have waited this many seconds with no compile "
        "worker connected (default: wait, saying so after 5 s and every 30 s)");
    local_fallback_opt_ = cmd->add_option(
        "--local-fallback", local_fallback_s_,
        "Start local compile workers once compiles have waited this many seconds with no "
        "connected worker that fits them (default: never)");
    cmd->add_option("--max-artifact-bytes", options_.max_artifact_bytes,
                    "Largest build a worker sends back (default 256 MiB); a larger one makes the "
                    "candidate invalid (too_large)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
    cmd->add_option("--determinism-check", options_.determinism_check,
                    "Compile this fraction of builds (0-1) a second time on another worker and "
                    "report artifacts that differ")
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--toolchain", toolchains_,
                    "NAME=ID: compile NAME's jobs only on workers whose toolchain id is ID "
                    "(repeatable; a worker logs its ids when it starts)");
    cmd->add_option("--lanes", options_.lanes, "Measurement lanes (CPU slots for timing)");
    cmd->add_option("--runs", options_.runs, "Timed runs per candidate");
    cmd->add_option("--warmup", options_.warmup, "Untimed runs before the timed ones");
    cmd->add_option("--timeout", options_.timeout_s, "Per-run timeout, seconds");
    cmd->add_option("--compile-timeout", options_.compile_timeout_s,
                    "Per-compile deadline, seconds");
    cmd->add_option("--db", options_.db, "Results database (SQLite)");
    cmd->add_flag("--resume", options_.resume,
                  "Continue the matching run in --db (exit 2 while another process runs it)");
    cmd->add_flag("--json", json_, "Print the result as JSON (docs/schema/autotune.schema.json)");
    cmd->add_flag("--quiet", quiet_, "Print only the winner's median runtime in ms");
    cmd->add_option("--allow-compiler", options_.allowed_compilers,
                    "Compilers the local workers may run (replaces the default list)");
    cmd->add_option("--heartbeat-ms", heartbeat_ms_, "Broker heartbeat interval")
        ->check(CLI::Range(10, 60000));
    cmd->add_option("--liveness", options_.liveness, "Missed heartbeats before a worker is dead")
        ->check(CLI::Range(1, 100));
    cmd->add_option("--launch", options_.launch,
                    "Kernel lane: launch file (docs/launch-file.md); the build template makes a "
                    "code object (nvcc -cubin)");
    cmd->add_option("--replay", options_.replay,
                    "Replay lane: time each candidate on a captured dispatch (rocm-perf isolate "
                    "--out DIR), verified against its output; the run template is `{BIN} "
                    "[KERNEL_SYMBOL]` and the build template makes a code object (nvcc -cubin)");
    cmd->add_flag("--no-static-screen", no_static_screen_,
                  "Kernel lane: send every built candidate to the lane, even one the static screen "
                  "finds the device would refuse (registers, shared memory, block size)");
    cmd->add_option("--backend", options_.backend,
                    "timing (whole processes) | cuda | rocm (kernels timed from the trace) | auto")
        ->check(CLI::IsMember({"timing", "cuda", "rocm", "auto"}));
    cmd->add_option("--kernel", options_.kernel_regex,
                    "Application lanes: kernels to time (ECMAScript regex; default every user "
                    "kernel)");
    cmd->add_option("--warmup-dispatches", options_.warmup_dispatches,
                    "Application lanes: dispatches per process and kernel not timed");
    cmd->add_option("--devices", options_.devices, "GPU lanes: all | 0,1,... (default: GPU 0)");
    noise_opt_ = cmd->add_option("--noise", noise_,
                                 "Adaptive sampling: relative noise to reach (default 0.005 on "
                                 "GPU lanes; timing: fixed --runs)")
                     ->check(CLI::Range(1e-6, 0.5));
    cmd->add_option("--min-time", options_.min_time_s,
                    "Adaptive sampling: measured seconds before the noise may stop it");
    cmd->add_option("--max-candidate-time", options_.max_candidate_time_s,
                    "Adaptive sampling: per-candidate cap, seconds");
    cmd->add_flag("--no-race", no_race_,
                  "Kernel lane: sample every candidate to the noise target, even one already "
                  "shown slower than the best so far beyond the noise (default: such a candidate "
                  "stops after 6 samples, sampling \"raced\", its interval stored)");
    cmd->add_flag("--no-prior-order", no_prior_order_,
                  "Exhaustive sweep in space order (default: what the last finished run of the "
                  "same space, sources and settings in --db measured goes first, fastest first, "
                  "so racing has a tight bound from the start; every configuration is still "
                  "measured)");
    cmd->add_option("--finalists", options_.finalists,
                    "Finalists re-measured interleaved at the end (0: no final round)");
    cmd->add_option("--final-rounds", options_.final_rounds, "Rounds of the final round");
    in_flight_opt_ =
        cmd->add_option("--max-in-flight", in_flight_,
                        "Candidates in flight (default 2 x (workers + lanes); with --strategy "
                        "model 2 x lanes, at least 4)")
            ->check(CLI::PositiveNumber);
    cmd->footer("Stopping: the first Ctrl-C (SIGINT) or SIGTERM drops the candidates waiting for a "
                "compile or a lane, lets the measurements already running finish (abandoning them "
                "after 10 s), skips the final round, stores what completed and exits 130; a second "
                "signal exits 130 at once. --resume continues the run either way.\n");
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(quiet_ || json_);
    options_.static_screen = !no_static_screen_;
    options_.race = !no_race_;
    options_.prior_order = !no_prior_order_;
    if (*budget_opt_) {
      options_.budget = budget_;
    }
    if (*workers_opt_) {
      options_.compile_workers = workers_;
    }
    if (*noise_opt_) {
      options_.noise = noise_;
    }
    if (*in_flight_opt_) {
      options_.max_in_flight = in_flight_;
    }
    if (*worker_wait_opt_) {
      options_.worker_wait_s = worker_wait_s_;
    }
    if (*local_fallback_opt_) {
      if (!(local_fallback_s_ >= 0.0)) {
        std::fprintf(stderr, "rocm-perf autotune: error: --local-fallback must be 0 or more "
                             "seconds; fix: e.g. --local-fallback 30\n");
        return bad_input;
      }
      options_.local_fallback_s = local_fallback_s_;
    }
    for (const auto& pin : toolchains_) {
      const auto eq = pin.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == pin.size()) {
        std::fprintf(stderr,
                     "rocm-perf autotune: error: --toolchain '%s' is not NAME=ID; fix: copy the "
                     "id a worker logs at start, e.g. --toolchain 'g++=g++ | g++ (Debian "
                     "12.2.0-14) 12.2.0; Copyright ... | 0123...'\n",
                     pin.c_str());
        return bad_input;
      }
      options_.pinned_toolchains[pin.substr(0, eq)] = pin.substr(eq + 1);
    }
    options_.heartbeat = std::chrono::milliseconds(heartbeat_ms_);
    try {
      return run_autotune_verb(options_, json_, quiet_);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "rocm-perf autotune: error: %s\n", error.what());
      return run_failed;
    }
  }

private:
  CLI::App* cmd_ = nullptr;
  autotune_options options_;
  bool json_ = false;
  bool quiet_ = false;
  bool no_static_screen_ = false;
  bool no_race_ = false;
  bool no_prior_order_ = false;
  std::int64_t heartbeat_ms_ = 1000;
  std::size_t budget_ = 0;
  std::size_t workers_ = 0;
  std::size_t in_flight_ = 0;
  CLI::Option* budget_opt_ = nullptr;
  CLI::Option* workers_opt_ = nullptr;
  CLI::Option* in_flight_opt_ = nullptr;
  double worker_wait_s_ = 0.0;
  double local_fallback_s_ = 0.0;
  CLI::Option* local_fallback_opt_ = nullptr;
  std::vector<std::string> toolchains_;
  CLI::Option* worker_wait_opt_ = nullptr;
  double noise_ = 0.005;
  CLI::Option* noise_opt_ = nullptr;
};

} // namespace

command_ptr make_autotune_command() {
  return std::make_unique<autotune_command>();
}

} // namespace rpl::engine::commands
