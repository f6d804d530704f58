#pragma once
/// One CLI verb per file in engine/commands/: each registers its own subcommand and options, then
/// runs when it was chosen. engine/cli.cpp only collects them, parses and dispatches. The helpers
/// here (signals, logging) are what every verb shares.

#include <atomic>
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

namespace rpl::engine::commands {

/// Exit codes, the contract in README.md: 0 done, 1 the run failed, 2 bad input (argument errors
/// included), 3 no valid result, 130 interrupted.
enum exit_code : int { done = 0, run_failed = 1, bad_input = 2, no_result = 3, interrupted = 130 };

class command {
public:
  virtual ~command() = default;
  /// Adds the verb's subcommand and its options to `app`.
  virtual void add_to(CLI::App& app) = 0;
  /// True when the parsed command line chose this verb.
  virtual bool chosen() const = 0;
  /// Runs the verb after a successful parse; returns the process exit code.
  virtual int run() = 0;
};

using command_ptr = std::unique_ptr<command>;

command_ptr make_autotune_command();
command_ptr make_profile_command();
command_ptr make_analyze_command();
command_ptr make_compare_command();
command_ptr make_inspect_command();
command_ptr make_worker_command();
command_ptr make_export_command();
command_ptr make_keys_command();
command_ptr make_workers_command();
command_ptr make_isolate_command();
command_ptr make_replay_command();
command_ptr make_optimize_command();

/// Set by the first SIGINT/SIGTERM (the verb stops in an orderly way); a second one exits the
/// process at once with `interrupted` (130).
std::atomic<bool>& stop_requested();
/// `note` (a whole line, a string literal) is written to stderr on the first signal; none when null
/// (a compile worker: its stderr is the engine's).
void install_signal_handlers(const char* note = nullptr);
/// spdlog to stderr; warnings and errors only when `quiet`.
void setup_logging(bool quiet);
/// Sets glibc's allocator for a verb that reads a large trace (analyze, compare, profile): blocks
/// up to 32 MiB from the heap rather than each from its own mapping, freed memory kept for the
/// next allocation (trimmed past 1 GiB), and the heap grown 64 MiB at a time. The trace's vectors
/// grow, are copied and freed by the hundred; each fresh mapping faulted its pages in again.
/// analyze --json on a million dispatches: 1.85-1.95 s against 2.07-2.32 s (bench/README.md).
void tune_allocator_for_traces();
/// Keeps `object` alive until the process ends, never destroyed: a verb's last act need not walk
/// a structure of a million nodes to free it, as the system takes the pages back at exit at once
/// (analyze on a million dispatches spent 4 % of its time so). Reachable through a static, so
/// leak checkers do not report it; a process that runs several verbs (the tests) keeps each.
void keep_until_exit(std::shared_ptr<const void> object);

} // namespace rpl::engine::commands
