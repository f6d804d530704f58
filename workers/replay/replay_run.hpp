#pragma once
/// Runs a replay program on a capture folder (`rocm-perf replay`): rpl-replay-cuda for a CUDA
/// capture (replay/cuda/replay_main.cpp), in its own process, and reads its JSON.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rpl::workers::replay {

/// rpl-replay-cuda: RPL_REPLAY_CUDA, else beside this executable.
std::optional<std::filesystem::path> find_cuda_replay_program();
/// rpl-replay-hsa: RPL_REPLAY_HSA, else in hip/ or bin/ beside this executable's folder.
std::optional<std::filesystem::path> find_hsa_replay_program();

struct replay_run_options {
  std::filesystem::path program;
  std::filesystem::path capture;
  int iterations = 20;
  int warmup = 3;
  std::optional<double> tolerance_abs;
  std::optional<double> tolerance_rel;
  bool relocate = false;
  /// --timing: "cupti", "events" or "batch" (replay_timing.hpp); empty: the program's default
  /// (cupti, falling back to events where CUPTI cannot be used).
  std::string timing;
  std::chrono::milliseconds timeout{600000};
  /// A tuning candidate in place of the captured kernel (same parameter list): its code object
  /// and its symbol; empty: the capture's.
  std::filesystem::path code_object;
  std::string kernel;
  /// Extra environment (CUDA_VISIBLE_DEVICES for a lane's device).
  std::vector<std::pair<std::string, std::string>> environment;
};

struct replay_run_result {
  int exit_code = 1;       ///< the program's: 0 verified, 1 failed, 2 bad input, 3 mismatch
  nlohmann::json document; ///< its JSON (null when it wrote none)
  std::string message;     ///< its stderr and stdout when it failed
};

replay_run_result run_replay(const replay_run_options& options);

} // namespace rpl::workers::replay
