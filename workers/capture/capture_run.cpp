#include "workers/capture/capture_run.hpp"

#include <cstdlib>
#include <fstream>

#include "workers/capture/capture_directory.hpp"
#include "workers/process/child_process.hpp"
#include "workers/process/exit_description.hpp"
#include "workers/process/find_program.hpp"

namespace rpl::workers::capture {

std::optional<std::filesystem::path> find_cuda_capture_library() {
  return find_installed("RPL_CUDA_CAPTURE",
                        {"../lib/librpl_cuda_capture.so", "librpl_cuda_capture.so"});
}

std::optional<std::filesystem::path> find_hsa_capture_library() {
  return find_installed("RPL_HSA_CAPTURE",
                        {"../hip/librpl_hsa_capture.so", "../lib/librpl_hsa_capture.so"});
}

capture_run_result run_capture(const capture_run_options& options) {
  child_options child;
  child.argv = options.command;
  child.max_output_bytes = 1u << 20;
  child.environment = {{"RPL_CAPTURE_DIR", std::filesystem::absolute(options.out).string()},
                       {"RPL_CAPTURE_KERNEL", options.kernel_regex},
                       {"RPL_CAPTURE_DISPATCH", std::to_string(options.dispatch)}};
  if (options.device) {
    child.environment.emplace_back(options.backend == "hsa" ? "ROCR_VISIBLE_DEVICES"
                                                            : "CUDA_VISIBLE_DEVICES",
                                   std::to_string(*options.device));
  }
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
  result.program_end = describe_exit(
      outcome, options.timeout.count() > 0 ? std::optional(options.timeout) : std::nullopt);
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
