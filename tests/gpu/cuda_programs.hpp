#pragma once
/// What the profile gpu tests run: rocm-perf, the CUPTI tracer and the CUDA programs built beside
/// them (tests/CMakeLists.txt), found in the build tree or in a relocated bundle (scripts/bundle:
/// bin/rocm-perf, lib/librpl_cupti_tracer.so, tests/<program>), and how a profile run went.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/tracers/cuda/cupti_recorder.hpp"

namespace rpl::testing {

/// The first of `candidates` that is an executable file; empty when none is. `tried` lists them.
inline std::filesystem::path first_executable(const std::vector<std::filesystem::path>& candidates,
                                              std::vector<std::string>& tried) {
  std::error_code ec;
  for (const auto& candidate : candidates) {
    if (candidate.empty())
      continue;
    tried.push_back(candidate.string());
    if (std::filesystem::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return {};
}

/// This test executable's folder (build/tests, or a bundle's tests/).
inline std::filesystem::path own_folder() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
}

/// A CUDA test program: $`env`, else beside this executable, else `built` (the build tree's).
inline std::filesystem::path find_cuda_program(const char* env,
                                               const std::string& name,
                                               const char* built,
                                               std::vector<std::string>& tried) {
  const char* from_env = std::getenv(env);
  return first_executable({from_env != nullptr ? std::filesystem::path(from_env) : "",
                           own_folder() / name, built != nullptr ? built : ""},
                          tried);
}

/// rocm-perf: $RPL_ROCM_PERF, else bin/ beside this executable's folder (build tree and bundle
/// alike), else the one this test was built with.
inline std::filesystem::path find_rocm_perf(std::vector<std::string>& tried) {
  const char* from_env = std::getenv("RPL_ROCM_PERF");
  return first_executable({from_env != nullptr ? std::filesystem::path(from_env) : "",
                           own_folder().parent_path() / "bin" / "rocm-perf", rocm_perf},
                          tried);
}

/// Why a profile gpu test cannot run here, or empty: no NVIDIA GPU, no tracer, no rocm-perf.
inline std::string cuda_profile_unavailable(std::filesystem::path& rocm_perf_path) {
  if (!workers::nvidia_gpu_present())
    return "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
  std::vector<std::string> tried;
  rocm_perf_path = find_rocm_perf(tried);
  if (rocm_perf_path.empty())
    return "no rocm-perf; looked at " + nlohmann::json(tried).dump();
  // rocm-perf finds the tracer the same way (RPL_CUPTI_TRACER, lib/ beside bin/).
  std::error_code ec;
  const auto tracer = workers::find_cupti_tracer({});
  const auto beside = rocm_perf_path.parent_path().parent_path() / "lib" / "librpl_cupti_tracer.so";
  if ((!tracer || !std::filesystem::exists(*tracer, ec)) && !std::filesystem::exists(beside, ec))
    return "no CUPTI tracer (librpl_cupti_tracer.so; configure with -DRPL_BUILD_CUDA=ON or set "
           "RPL_CUPTI_TRACER)";
  return {};
}

/// One `rocm-perf profile` run with --out: how it ended and what it wrote.
struct profile_run {
  workers::child_outcome outcome;
  nlohmann::json report;                     ///< --out's profile.json; null when none was written
  std::vector<std::filesystem::path> traces; ///< the *.db files under --out's traces/
};

inline profile_run run_profile(const std::filesystem::path& rocm_perf_path,
                               const std::filesystem::path& out,
                               std::vector<std::string> options,
                               const std::vector<std::string>& app) {
  workers::child_options child;
  child.argv = {rocm_perf_path.string(), "profile", "--backend", "cuda", "--out", out.string()};
  child.argv.insert(child.argv.end(), options.begin(), options.end());
  child.argv.push_back("--");
  child.argv.insert(child.argv.end(), app.begin(), app.end());
  child.max_output_bytes = 4 << 20;
  profile_run run;
  run.outcome = workers::run_child(child, std::chrono::minutes(3));
  std::error_code ec;
  if (std::filesystem::exists(out / "profile.json", ec))
    run.report = nlohmann::json::parse(read_text(out / "profile.json"), nullptr, false);
  for (auto it = std::filesystem::recursive_directory_iterator(out / "traces", ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".db")
      run.traces.push_back(it->path());
  }
  return run;
}

} // namespace rpl::testing
