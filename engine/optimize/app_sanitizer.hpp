#pragma once
/// The application pass of the sanitizer (issue 36), for `optimize -- APP --app-build`. A replay
/// cannot run under compute-sanitizer (the tool's own allocations take the captured addresses),
/// so a kernel's accepted change is checked where it runs: the application, rebuilt with the
/// accepted changes, runs once per tool (memcheck, racecheck, initcheck, synccheck) for each
/// improved kernel, the tool watching that kernel alone (by its mangled name). A finding refuses
/// the kernel's change: its accepted attempts become `rejected` at stage `sanitizer` with
/// `sanitizer:<tool>` and the tool's first report line, the kernel becomes `unchanged`, and its
/// diff is dropped, so neither the application's second profile nor `--apply` carries it. A report
/// is the change's only when the original application, run the same way, gives none: where it
/// does too, the tool cannot judge the change (`original_finding`); a run killed at its deadline
/// without a report is `not_run`. Each tool's outcome goes into the kernel's last accepted
/// attempt's validation record (scope "application"), so an acceptance all four tools passed is
/// sanitizer-checked in the report, and one with `original_finding` or `not_run` is not.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/optimize/app_mode.hpp"
#include "engine/optimize/kernel_optimizer.hpp"

namespace rpl::engine {

struct app_sanitizer_pass {
  std::vector<std::string> argv;              ///< the rebuilt application
  std::vector<std::string> original_argv;     ///< the application as given (-- APP)
  std::map<std::string, std::string> symbols; ///< kernel (target_result::kernel) -> mangled name
  std::filesystem::path log_dir;              ///< OUT/sanitizer (created)
  int device = 0;                             ///< the GPU the application runs on
  std::chrono::milliseconds tool_timeout = app_run_timeout; ///< one run under one tool
};

/// Runs the pass over every improved kernel of `results` and refuses those with a finding (see
/// above); returns the application report's "sanitizer" object: `ran`, `seconds`, `refused`
/// (kernel -> the finding), or `not_run` with the reason (no compute-sanitizer, interrupted).
nlohmann::json sanitize_accepted(std::vector<target_result>& results,
                                 const app_sanitizer_pass& pass,
                                 const app_tools& tools,
                                 const std::atomic<bool>& stop);

} // namespace rpl::engine
