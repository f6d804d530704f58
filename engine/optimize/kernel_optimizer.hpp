#pragma once
/// Optimizing one kernel (docs/optimize.md): the original is built, validated against itself and
/// screened; then proposals travel the tuning graph as candidates (proposal_journey.hpp: the list
/// of rooms, guards and verdicts in order), accepted changes compound on the incumbent, and the
/// accepted chain is measured against the original once more at the end. Everything is validated
/// against the original kernel, never against an accepted change. A --resume of a finished kernel
/// reads its result from the journal and builds and measures nothing; of an unfinished one, it
/// rebuilds the accepted chain (from the artifact cache) and judges no diff twice. The services
/// (compile, propose, parse) and the lanes are seams, so tests drive it with fakes and the
/// command with real processes.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/optimize/attempt_record.hpp"
#include "messages/proposal.hpp"
#include "messages/wire.hpp"
#include "stages/optimize/paired_verdict.hpp"
#include "stages/optimize/source_model.hpp"
#include "stages/search/launch_spec.hpp"
#include "stages/search/param_value.hpp"

namespace rpl::engine {

class artifact_store;
class compile_service;
class lane_worker;
class optimize_journal;

/// What the loop asks of the outside world.
struct optimizer_services {
  /// The graph's compile gateway ({OUT} unexpanded in the argv: the worker places it): the
  /// broker's workers behind the artifact cache, or a fake in tests. Must outlive the run.
  compile_service* compiler = nullptr;
  /// Asks a proposer of `kind` ("rule", "llm"); blocking, bounded by request.timeout_ms.
  std::function<messages::propose_reply(const std::string& kind,
                                        const messages::propose_request& request)>
      propose;
  /// Parses a translation unit (libclang); nullopt with `error` set when it cannot.
  std::function<std::optional<stages::optimize::source_model>(const std::string& text,
                                                              std::string& error)>
      parse;
  /// Compares the candidate's code object with the original's (stages/optimize/artifact_guard);
  /// empty: the stage itself. Tests replace it where their "code objects" are not real ones.
  std::function<std::vector<std::pair<std::string, std::string>>(
      const std::vector<std::byte>& original,
      const std::vector<std::byte>& candidate,
      const std::string& kernel)>
      check_artifact;
};

/// One kernel to optimize, with everything resolved.
struct kernel_target {
  std::string kernel; ///< the launch symbol and the function's name in the source
  std::filesystem::path source_path;
  std::string source_text;                    ///< the user's file as read at the start
  std::string language;                       ///< "cuda" or "hip"
  std::vector<std::string> build_argv;        ///< the build template expanded, {OUT} left in place
  std::vector<std::string> compile_flags;     ///< -D/-I/-std words of build_argv, for parsing
  std::vector<messages::source_file> sources; ///< every --source; the target's is replaced
  /// How candidates run: on the kernel lane from this launch file (validated in every case of
  /// stages/optimize/validation_plan.hpp against the original), or — when `replay_dir` is set —
  /// on the replay lane on a dispatch captured from the application (validated against the
  /// captured outputs).
  stages::launch_spec launch;
  std::filesystem::path replay_dir;
  std::string symbol; ///< the code-object symbol the replay launches (mangled); empty: captured
  stages::configuration config; ///< --param values: the launch file's and template's names
  std::uint32_t block_threads = 0;
  std::string analysis; ///< the kernel's analysis as text, for proposers (may be empty)
};

struct optimizer_settings {
  std::vector<std::string> proposers = {"rule"};
  std::uint32_t iterations = 3;
  std::uint32_t max_repairs = 2;
  std::uint32_t max_proposals = 32; ///< per proposer and iteration
  std::uint32_t rounds = 15;        ///< paired rounds per comparison
  std::uint32_t runs_per_round = 5; ///< samples per side and round; their median is the round's
  double noise_target = 0.01;
  std::uint64_t seed = 1;                                        ///< of the validation inputs
  std::optional<std::chrono::steady_clock::time_point> deadline; ///< --time-budget
  /// Candidates in the graph at once: a batch's compiles run in parallel up to this many.
  std::size_t max_in_flight = 4;
  /// Configurations measured per proposal with tunable macros (autotune's exhaustive strategy
  /// when the space fits, else its model strategy); 0: such proposals are skipped.
  std::uint32_t tune_budget = 24;
  std::uint32_t propose_timeout_ms = 120000;
  std::uint32_t lane_timeout_ms = 60000;
  std::string device_arch; ///< for the static screen; empty: from the compile reply
  bool resume = false;     ///< take verdicts of earlier attempts from the journal
};

struct target_result {
  std::string kernel;
  std::filesystem::path source_path;
  /// The kernel's fate: "improved" (a change was accepted and the final comparison confirms it),
  /// "unchanged" (tried; nothing helped beyond the noise; the evidence is in attempts),
  /// "not_reached" (never tried: the time budget or an interrupt), "skipped" (-- APP: not in the
  /// sources, defined twice, its dispatch not capturable), "failed" (the original could not be
  /// built, validated or measured: `error` says why).
  std::string status = "failed";
  std::string error;
  std::string reason; ///< one line: why this fate (every status)
  double seconds = 0; ///< wall time spent on the kernel, its capture included
  /// Figures only for work done: both 0 when nothing was measured (the report then has no
  /// original_ns, best_ns or speed-up for the kernel; see has_figures).
  double original_ns = 0.0;
  double best_ns = 0.0;
  stages::optimize::paired_verdict final_comparison; ///< original vs best, when improved
  std::string best_source;
  std::string accepted_diff; ///< original → best, for --out and --apply
  std::vector<attempt_record> attempts;
  std::uint32_t proposals_seen = 0;
  std::vector<std::string> proposer_errors; ///< proposers that failed, and why
  /// For an unchanged kernel: each rule that looked at it and why it did not apply, the rule
  /// proposer's notes (messages::propose_reply::notes, from stages/optimize/rule_transforms),
  /// each line once; empty without the rule proposer.
  std::vector<std::string> rules_not_applied;
};

/// Whether `r` has figures to report: improved or unchanged, and measured.
bool has_figures(const target_result& r);

/// Optimizes `target` on `lanes` (one device's: the graph's lane room), storing code objects in
/// `artifacts`; never throws for a candidate's failure.
target_result optimize_kernel(const kernel_target& target,
                              const optimizer_settings& settings,
                              const optimizer_services& services,
                              const std::vector<std::unique_ptr<lane_worker>>& lanes,
                              optimize_journal& journal,
                              const artifact_store& artifacts,
                              const std::atomic<bool>& stop);

} // namespace rpl::engine
