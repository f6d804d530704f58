#pragma once
/// `rocm-perf optimize`: the guarded closed loop (engine/optimize/kernel_optimizer.hpp) for one
/// kernel or several, with its processes around it: the broker on a private ipc:// socket, local
/// compile workers, local proposer workers (`worker propose --kind rule|llm`), one kernel lane per
/// GPU. Writes --out (report.json, report.md, one accepted .diff per kernel, optimize.sqlite,
/// attempts.jsonl), applies accepted changes with a backup under --apply, and rolls them back.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/campaign/campaign_inputs.hpp"

namespace rpl::engine {

/// Bad input: the message names the input, the problem and a fix (exit 2).
class optimize_input_error : public campaign_input_error {
public:
  using campaign_input_error::campaign_input_error;
};

struct optimize_options {
  std::vector<std::filesystem::path> sources;
  std::vector<std::string> kernels; ///< --kernel (repeatable); with --launch exactly one
  std::filesystem::path launch;
  std::string build_template;
  std::vector<std::pair<std::string, std::string>> params; ///< --param NAME=VALUE
  std::string proposer = "rule";                           ///< rule | llm | both
  std::uint32_t iterations = 3;
  std::chrono::seconds time_budget{0}; ///< 0: none
  std::string devices = "0";           ///< "all" or a comma list
  std::filesystem::path out = "optimize-out";
  bool apply = false;
  bool json = false;
  bool resume = false;
  std::string llm_endpoint;
  std::string llm_model;
  std::uint32_t llm_timeout_s = 120; ///< one proposer request, retries included
  std::uint32_t rounds = 15;
  std::uint32_t runs_per_round = 5;
  std::uint32_t tune_budget = 24; ///< configurations per proposal with tunable macros
  double noise_target = 0.01;
  std::uint64_t seed = 1;
  std::size_t compile_workers = 0;         ///< 0: min(2, cores)
  std::filesystem::path worker_executable; ///< empty: this executable
  /// Application mode: `-- APP ARGS` profiled, its top K kernels found in the sources, each
  /// measured on its captured dispatch (replay lane); --app-build rebuilds and re-profiles it.
  std::vector<std::string> app;
  std::size_t top = 3;
  std::string app_build;
  /// -- APP without --source: the folder searched for the kernels' definitions (empty: the
  /// current directory), and the tree --app-build copies.
  std::filesystem::path source_dir;
  /// --replay DIR: one dispatch captured by `rocm-perf isolate`, optimized on the replay lane
  /// (with exactly one --kernel, which the capture must be of, and its --source).
  std::filesystem::path replay_dir;
  /// The least time a kernel's turn needs under --time-budget (its original built and
  /// validated, a proposal judged, the final comparison): one whose turn comes with less left is
  /// not started (not_reached).
  /// 10 s: on an H200 a 100 us kernel on the replay lane had its original validated and its
  /// first proposal judged within 5 s, and its three iterations done within 16 s.
  std::chrono::seconds min_kernel_time{10};
  /// Remote proposers (and compile workers): CURVE endpoints they connect to, always with
  /// --curve-keys (the engine's pair) and --allow-keys (the workers' public keys): a proposer's
  /// answers steer what the engine compiles, so no unauthenticated peer is taken.
  std::vector<std::string> listen;
  std::filesystem::path curve_keys;
  std::filesystem::path allow_keys;
  std::string device_arch; ///< for the static screen (sm_90); empty: unknown
};

struct app_tools;

/// Runs the verb; returns the exit code (0 done: some kernel was tried, whether or not a change
/// was accepted, see the report; 1 failed: every kernel tried failed, or --apply did; 3 no valid
/// result: no kernel could be tried (none defined in the sources, none capturable, none reached
/// within --time-budget); 130 interrupted). Throws optimize_input_error for bad input. `tools`:
/// the application's tracer and capture (default_app_tools(), or tests' stand-ins).
int run_optimize(const optimize_options& options, std::atomic<bool>& stop);
int run_optimize(const optimize_options& options, std::atomic<bool>& stop, const app_tools& tools);

/// `optimize --rollback DIR`: restores the files an --apply changed, byte for byte.
int rollback_optimize(const std::filesystem::path& out, bool force);

} // namespace rpl::engine
