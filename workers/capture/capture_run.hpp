#pragma once
/// Runs a program under a capture library (`rocm-perf isolate`): CUDA through
/// CUDA_INJECTION64_PATH=librpl_cuda_capture.so (capture/cuda/capture_injection.cpp), with the
/// kernel regex, dispatch index and folder in RPL_CAPTURE_*; then reads what the library left in
/// capture_status.json.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rpl::workers::capture {

/// The CUDA capture library: RPL_CUDA_CAPTURE, else lib/ beside bin/ of this executable.
std::optional<std::filesystem::path> find_cuda_capture_library();
/// The HSA capture library (an HSA tools library): RPL_HSA_CAPTURE, else hip/ or lib/ beside bin/.
std::optional<std::filesystem::path> find_hsa_capture_library();

struct capture_run_options {
  std::vector<std::string> command;
  std::string kernel_regex;
  std::uint64_t dispatch = 0;
  std::filesystem::path out;
  std::filesystem::path library;
  std::string backend = "cuda";         ///< "cuda" (CUDA_INJECTION64_PATH) or "hsa" (HSA_TOOLS_LIB)
  std::chrono::milliseconds timeout{0}; ///< 0: none
  /// The GPU the program runs on, as the lanes pin theirs: CUDA_VISIBLE_DEVICES (cuda) or
  /// ROCR_VISIBLE_DEVICES (hsa) set to it; none: the program's own choice.
  std::optional<int> device;
};

struct capture_run_result {
  /// "captured", "refused", "not_found", or "no_status" (the library wrote nothing: it never
  /// loaded, or the program died before the end)
  std::string status;
  std::string reason;
  nlohmann::json status_document;
  std::string program_end; ///< "exited with status 0", "was killed by SIGSEGV", "timed out"
  bool program_ok = false;
  std::string program_output; ///< the program's stdout and stderr (the first MiB)
};

capture_run_result run_capture(const capture_run_options& options);

} // namespace rpl::workers::capture
