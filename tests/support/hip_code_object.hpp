#pragma once
/// A real AMDGPU code object for tests: dir/k.hip compiled by hipcc, device code only, into
/// dir/k.hsaco (Debian's hipcc reaches gfx90a, gfx940 and gfx1030; ../shared/docs/machines.md).

#include <chrono>
#include <filesystem>
#include <string>

#include "workers/process/child_process.hpp"

namespace rpl::testing {

/// Runs `hipcc --offload-arch=<target> --cuda-device-only --no-gpu-bundle-output -c k.hip -o
/// k.hsaco` in `dir`; the caller checks the outcome (or that k.hsaco exists).
inline workers::child_outcome compile_hsaco(const std::filesystem::path& dir,
                                            std::chrono::milliseconds timeout,
                                            const std::string& hipcc = "hipcc",
                                            const std::string& target = "gfx90a") {
  workers::child_options compile;
  compile.argv = {hipcc,
                  "--offload-arch=" + target,
                  "--cuda-device-only",
                  "--no-gpu-bundle-output",
                  "-c",
                  "k.hip",
                  "-o",
                  "k.hsaco"};
  compile.cwd = dir;
  compile.max_output_bytes = 1 << 20;
  return workers::run_child(compile, timeout);
}

} // namespace rpl::testing
