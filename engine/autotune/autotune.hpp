#pragma once
/// The autotune job: validates its inputs (autotune_inputs.hpp), opens the store and resumes
/// (autotune_session.hpp), then streams the space's candidates through the tuning graph
/// (engine/graph/) with compile workers as separate processes behind the broker.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/broker/broker_stats.hpp"
#include "engine/campaign/campaign_inputs.hpp"
#include "engine/graph/candidate_state.hpp"
#include "engine/graph/lane_worker.hpp"
#include "engine/store/results_store.hpp"

namespace rpl::engine {

/// Bad input found before anything runs: the message names the input, the problem and the fix.
class config_error : public campaign_input_error {
public:
  using campaign_input_error::campaign_input_error;
};

struct autotune_options {
  std::filesystem::path space_file;
  /// --recorded: a Kernel Tuner cache file answers every measurement (the recorded lane); the
  /// space is its configurations, nothing is compiled or run.
  std::filesystem::path recorded;
  std::string build_template;
  std::string cmd_template;
  std::vector<std::filesystem::path> sources;
  std::string strategy = "exhaustive";
  std::optional<std::size_t> budget;
  std::uint64_t seed = 0;
  /// --strategy model: the seed sample as a fraction of the space (default: twice the linear
  /// features) and the confirm phase as a fraction of the budget (default 0.1).
  std::optional<double> seed_fraction;
  std::optional<double> confirm_fraction;
  std::optional<std::size_t> compile_workers; ///< default: cores - lanes, at least 1
  std::vector<std::string> listen;            ///< extra endpoints for remote workers
  /// CURVE on the --listen endpoints: the engine's key pair (rocm-perf keys generate) and the
  /// allow-list of worker public keys. A TCP --listen endpoint beyond loopback needs both, or
  /// `insecure`.
  std::filesystem::path curve_keys;
  std::filesystem::path allow_keys;
  bool insecure = false;
  /// Compile every candidate even when the artifact cache holds its build (successes are still
  /// remembered).
  bool no_compile_cache = false;
  std::size_t lanes = 1;
  std::uint32_t runs = 5;
  std::uint32_t warmup = 1;
  double timeout_s = 60.0;          ///< per measured run
  double compile_timeout_s = 600.0; ///< per compile job (the worker's deadline)
  std::filesystem::path db = "rocm-perf.db";
  bool resume = false;
  std::chrono::milliseconds heartbeat{1000};
  int liveness = 3;
  std::vector<std::string> allowed_compilers; ///< empty: the default allow-list
  /// default: 2 × (workers + lanes), at least 128 with --listen (remote slots are not known in
  /// advance); --strategy model: 2 × lanes, at least 4 (it learns from results, so fewer picks are
  /// made before their predecessors' results are in)
  std::optional<std::size_t> max_in_flight;
  std::filesystem::path worker_executable; ///< default: this executable
  /// --worker-wait: the run fails (exit 1) once compiles have waited this long with no compile
  /// worker connected; nullopt: wait for ever (with a notice after 5 s and every 30 s).
  std::optional<double> worker_wait_s;
  /// --local-fallback: once compiles have waited this long with no connected worker that fits
  /// them, start local compile workers (cores - lanes, at least 1); nullopt: never.
  std::optional<double> local_fallback_s;
  /// --determinism-check: this fraction of builds (chosen by build key) is compiled a second time
  /// on another worker and the artifacts compared; 0: none.
  double determinism_check = 0.0;
  /// --max-artifact-bytes: a larger build is not sent back (compile status too_large, the
  /// candidate invalid); artifacts travel in chunks of artifact_chunk_bytes (docs/protocol.md).
  std::uint64_t max_artifact_bytes = 256ULL << 20;
  std::uint32_t artifact_chunk_bytes = 1U << 20;
  /// --toolchain NAME=ID: compile NAME's jobs only on workers with this toolchain id, whatever
  /// this host has (toolchain_identity.hpp; a worker logs its ids at start).
  std::map<std::string, std::string> pinned_toolchains;
  /// A stop (SIGINT, SIGTERM, a failure) gives the measurements already running this long to
  /// finish, then abandons them. Also bounds a final round that a stop interrupts.
  double stop_grace_s = 10.0;

  // What a lane measures (issue 9). Without --launch and with backend timing: whole processes.
  /// Kernel lane: the launch file; the build template then makes a code object (nvcc -cubin).
  std::filesystem::path launch;
  /// Replay lane: a capture folder (`rocm-perf isolate`); each candidate is timed on that dispatch,
  /// replayed with the candidate's code object ({BIN}, nvcc -cubin) in place of the captured one.
  std::filesystem::path replay;
  std::string backend = "timing"; ///< timing | cuda | rocm | auto (application lanes)
  std::string kernel_regex;       ///< application lanes: kernels timed; empty: every user kernel
  std::uint32_t warmup_dispatches = 1; ///< application lanes: per process and kernel name
  std::string devices;                 ///< GPU lanes: "" (device 0), "all", or "0,1,..."
  /// Adaptive sampling: the relative noise to reach; nullopt: exactly --runs samples (the
  /// default for the timing backend; GPU lanes default to 0.005).
  std::optional<double> noise;
  double min_time_s = 0.0;            ///< measured time before the noise may stop sampling
  double max_candidate_time_s = 10.0; ///< per-candidate sampling cap (wall)
  std::size_t finalists = 5;          ///< final interleaved round; 0 or 1: none
  std::uint32_t final_rounds = 10;    ///< rounds of the final round
  /// Kernel lane: stop sampling a candidate once its median interval lies wholly above the best
  /// so far by more than the separating noise (stages/statistics/race_rule.hpp); --no-race: off.
  bool race = true;
  /// --strategy exhaustive: measure what the last finished run of the same fingerprint in this
  /// database measured first, fastest first (stages/search/prior_order.hpp); --no-prior-order:
  /// space order.
  bool prior_order = true;
  std::filesystem::path kernel_lane_program; ///< default: rpl-kernel-lane next to rocm-perf
  /// The static screen (engine/autotune/candidate_screen.hpp): a candidate the device would refuse
  /// to launch is invalid before it reaches a lane. --no-static-screen turns it off.
  bool static_screen = true;
};

struct autotune_counts {
  std::size_t planned = 0;
  std::size_t completed = 0;  ///< verdict final and stored, this session
  std::size_t compiled = 0;   ///< compile ok, this session
  std::size_t measured = 0;   ///< valid measurement, this session
  std::size_t failed = 0;     ///< invalid verdicts, this session
  std::size_t resumed = 0;    ///< skipped because a previous session completed them
  std::size_t duplicates = 0; ///< configurations whose key was already in this run
};

/// Progress as the store sees it; called on the store node's thread, one call at a time.
struct autotune_progress {
  const candidate_state* candidate = nullptr;
  autotune_counts counts;
  std::optional<stored_candidate> best;
  std::chrono::steady_clock::duration elapsed{};
};

/// One finalist of the final round: its estimate and its difference to the winner, paired.
struct finalist_result {
  std::string key;
  double median_ns = 0.0;
  double low_ns = 0.0; ///< the median's interval (confidence `final_round_result::confidence`)
  double high_ns = 0.0;
  double relative_difference = 0.0; ///< paired: median of this / winner - 1 per round
  double relative_low = 0.0;
  double relative_high = 0.0;
  double separating_noise = 0.0; ///< what a difference had to clear to separate
  bool tied = false;
};

/// The honest winner: finalists re-measured interleaved (A B C, B C A, ...), each round whole on
/// one lane; with several lanes the rounds are dealt out to them.
struct final_round_result {
  std::string lane; ///< the lanes that ran rounds, comma-separated (e.g. "gpu0,gpu1")
  std::uint32_t rounds = 0;
  double confidence = 0.95;
  double noise_target = 0.0;
  std::string winner;
  std::vector<std::string> tie_set; ///< the winner and every finalist within the noise of it
  std::vector<finalist_result> finalists;
};

/// Whether the sweep kept its pipeline full: the bound is wall_s <= 1.15 x
/// max(compile_bound_s, lane_bound_s), and each lane busy for most of its window.
struct pipeline_report {
  double compile_bound_s = 0.0; ///< sum of this session's compile times / compile workers
  double lane_bound_s = 0.0;    ///< sum of lane busy time / lanes
  double bound_ratio = 0.0;     ///< wall_s / max(compile_bound_s, lane_bound_s); 0 when both are 0
  std::vector<lane_activity> lanes;
};

struct autotune_result {
  std::string run_id;
  std::string run_status; ///< finished | interrupted | failed
  std::string error;      ///< why the run failed, if it did
  std::filesystem::path db;
  std::size_t space_size = 0;
  std::size_t space_total = 0;
  std::size_t cut_by_constraints = 0;
  std::string strategy;
  autotune_counts counts;
  std::size_t compile_workers = 0;
  std::size_t lanes = 0;
  double wall_s = 0.0;
  std::string winner_key;
  std::vector<stored_candidate> candidates; ///< every completed candidate of the run
  broker_stats broker;
  /// Local compile workers started by --local-fallback (0: none were needed, or no fallback).
  std::size_t fallback_workers = 0;
  /// The determinism check: the fraction asked for, builds compared on two workers, those whose
  /// artifacts differed, and those chosen but not compared.
  struct {
    double fraction = 0.0;
    std::uint64_t checked = 0;
    std::uint64_t mismatched = 0;
    std::uint64_t skipped = 0;
  } determinism;
  /// The artifact cache: builds answered from it, and builds sent to the compile workers (none
  /// with --recorded).
  struct {
    std::uint64_t hits = 0;
    std::uint64_t compiled = 0;
  } compile_cache;
  std::int64_t sum_compile_ns = 0; ///< this session's compile times
  std::int64_t sum_run_ns = 0;     ///< this session's measured run times (warm-up excluded)
  std::string lane_kind;           ///< timing | kernel | cuda | rocm
  std::optional<double> noise_target;
  std::vector<std::string> devices; ///< "model (uuid)" per GPU lane
  std::optional<final_round_result> final_round;
  std::string winner_note; ///< why there is a tie, or why no final round ran
  pipeline_report pipeline;
  nlohmann::json model; ///< the strategy's summary (--strategy model), else null
  /// The earlier run whose medians ordered this exhaustive sweep, and how many configurations it
  /// knew; empty: space order.
  std::string prior_run;
  std::size_t prior_known = 0;
};

/// Runs one autotune job. Throws config_error (bad input, nothing written) or store_error.
/// `stop` may be set from a signal handler: no new candidate starts, those waiting for a compile
/// or a lane are dropped (not stored), measurements already running get `stop_grace_s`, and the
/// final round is skipped; the run is stored as "interrupted".
autotune_result run_autotune(const autotune_options& options,
                             const std::function<void(const autotune_progress&)>& on_progress,
                             const std::atomic<bool>& stop);

/// The final round as stored (results store, final_rounds) and printed under "final_round".
nlohmann::json to_json(const final_round_result& final_round);
/// The inverse of to_json(final_round_result); nullopt for a document it did not write.
std::optional<final_round_result> final_round_from_json(const nlohmann::json& doc);

/// The JSON document printed by `--json` (docs/schema/autotune.schema.json).
nlohmann::json to_json(const autotune_result& result);

} // namespace rpl::engine
