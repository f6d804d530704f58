#include "workers/capture/capture_run.hpp"

#include <cstdlib>
#include <fstream>

#include <string.h>

#include "workers/capture/capture_directory.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::workers::capture {

std::optional<std::filesystem::path> find_cuda_capture_library() {
  if (const char* env = std::getenv("RPL_CUDA_CAPTURE"); env != nullptr && *env != '\0') {
    return std::filesystem::path(env);
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (const auto& candidate : {exe.parent_path().parent_path() / "lib" / "librpl_cuda_capture.so",
                                exe.parent_path() / "librpl_cuda_capture.so"}) {
    if (std::filesystem::exists(candidate, ec)) {
      return candidate;
    }
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> find_hsa_capture_library() {
  if (const char* env = std::getenv("RPL_HSA_CAPTURE"); env != nullptr && *env != '\0') {
    return std::filesystem::path(env);
  }
  std::error_code ec;
  const auto root = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path();
  for (const auto& candidate :
       {root / "hip" / "librpl_hsa_capture.so", root / "lib" / "librpl_hsa_capture.so"}) {
    if (std::filesystem::exists(candidate, ec)) {
      return candidate;
    }
  }
  return std::nullopt;
}

capture_run_result run_capture(const capture_run_options& options) {
  child_options child;
  child.argv = options.command;
  child.max_output_bytes = 1u << 20;
  child.environment = {{"RPL_CAPTURE_DIR", std::filesystem::absolute(options.out).string()},
                       {"RPL_CAPTURE_KERNEL", options.kernel_regex},
                       {"RPL_CAPTURE_DISPATCH", std::to_string(options.dispatch)}};
  if (options.backend == "hsa") {
    // The HSA runtime loads the tools libraries HSA_TOOLS_LIB names and calls their OnLoad.
    child.environment.emplace_back("HSA_TOOLS_LIB", options.library.string());
  } else {
    child.environment.emplace_back("CUDA_INJECTION64_PATH", options.library.string());
    // Preloaded as well, so that its mmap sees the driver reserve its address-space pools from the
    // start (the replay recreates them at the same addresses).
    const char* preload = std::getenv("LD_PRELOAD");
    child.environment.emplace_back(
        "LD_PRELOAD",
        options.library.string() +
            (preload != nullptr && *preload != '\0' ? std::string(":") + preload : std::string()));
    // Eager module loading, so that a kernel's module image is seen before its first launch (the
    // library also looks again after the launch); the user's own setting wins.
    if (std::getenv("CUDA_MODULE_LOADING") == nullptr) {
      child.environment.emplace_back("CUDA_MODULE_LOADING", "EAGER");
    }
  }
  const auto timeout = options.timeout.count() > 0 ? options.timeout : std::chrono::hours(24 * 365);
  const auto outcome =
      run_child(child, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  capture_run_result result;
  result.program_output = outcome.output;
  result.program_ok = outcome.succeeded();
  if (!outcome.launched) {
    result.program_end = outcome.launch_error;
  } else if (outcome.timed_out) {
    result.program_end = "timed out";
  } else if (outcome.term_signal != 0) {
    const char* name = sigabbrev_np(outcome.term_signal);
    result.program_end = std::string("was killed by SIG") + (name != nullptr ? name : "?");
  } else {
    result.program_end = "exited with status " + std::to_string(outcome.exit_code);
  }
  std::ifstream in(options.out / status_file);
  if (!in) {
    result.status = "no_status";
    result.reason = outcome.launched
                        ? "the capture library left no " + std::string(status_file) +
                              " (it did not load: is this a " +
                              std::string(options.backend == "hsa" ? "HIP or HSA" : "CUDA") +
                              " program? or the program " + result.program_end + " before its end)"
                        : result.program_end;
    return result;
  }
  try {
    result.status_document = nlohmann::json::parse(in);
    result.status = result.status_document.value("status", std::string("no_status"));
    result.reason = result.status_document.value("reason", std::string());
  } catch (const nlohmann::json::exception& error) {
    result.status = "no_status";
    result.reason = std::string("unreadable ") + status_file + ": " + error.what();
  }
  return result;
}

} // namespace rpl::workers::capture
