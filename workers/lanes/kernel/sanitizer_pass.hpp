#pragma once
/// The vendor's checker over a candidate before it is accepted: the kernel lane process started
/// under NVIDIA compute-sanitizer (`--tool memcheck|racecheck|initcheck|synccheck`, with
/// `--error-exitcode`), its red zones off so that the tool sees every buffer's true end, given
/// the candidate's launches (no reference kernel: correctness was shown before, only the tool's
/// findings count). A tool that reports an error, or a lane that does not finish under it, is a
/// finding with the tool's first report line; its log stays in `log_dir`.
///
/// AMD has no equivalent run here: address sanitizer needs an xnack-capable target and a build
/// with -fsanitize=address, so on HIP the pass is not run and the report says so.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

/// The tools, in the order the pass runs them (cheapest and most telling first).
inline constexpr std::string_view sanitizer_tools[] = {"memcheck", "racecheck", "initcheck",
                                                       "synccheck"};

struct sanitizer_options {
  std::filesystem::path sanitizer;    ///< compute-sanitizer (find_compute_sanitizer())
  std::filesystem::path lane_program; ///< rpl-kernel-lane
  int device = 0;                     ///< exported as CUDA_VISIBLE_DEVICES
  /// How long one tool may take for every request (start-up included); then it is a finding.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::filesystem::path log_dir; ///< one log per tool and candidate; must exist
  std::string log_stem;          ///< file names: <log_stem>.<tool>.log
};

/// compute-sanitizer: $RPL_COMPUTE_SANITIZER when set, else on PATH, else in
/// /usr/local/cuda/bin; nullopt when there is none.
std::optional<std::filesystem::path> find_compute_sanitizer();

/// Runs `requests` on one lane process under `tool`. Never throws for what the candidate does.
sanitizer_outcome run_sanitizer(const sanitizer_options& options,
                                std::string_view tool,
                                const std::vector<messages::kernel_lane_request>& requests);

/// The kernel the application pass watches: its mangled name (what the tool's --kernel-name
/// filter matches) and its function name (what a report's location names).
struct app_kernel_watch {
  std::string symbol;
  std::string function;
};

/// The application pass (optimize -- APP --app-build): the application `argv` run once under
/// `tool`, pinned to options.device, the application's own output kept in
/// <log_stem>.<tool>.out beside the log. memcheck, racecheck and synccheck watch the kernel alone
/// (--kernel-name kne=<symbol>; memcheck with --padding 4096, as the application's buffers may
/// abut). initcheck watches every kernel: memory another kernel wrote looks uninitialized to it
/// when that kernel is not watched; only its reports located in the watched function count.
/// Reports about the application's host code (a host API call that reads uninitialized memory)
/// or other kernels are kept in `other_report` and do not decide. Clean when the application ends
/// normally under the tool (exit 0, or the tool's error exit for those other reports) and no
/// report of the kernel's is in the log; killed at options.timeout without one, `timed_out`.
/// Never throws for what the application does.
sanitizer_outcome run_app_sanitizer(const sanitizer_options& options,
                                    std::string_view tool,
                                    const std::vector<std::string>& argv,
                                    const app_kernel_watch& kernel);

/// Every report in a compute-sanitizer log, as first_sanitizer_report words each.
std::vector<std::string> sanitizer_reports(std::string_view log);

/// The first report in a compute-sanitizer log: the first "========= " line that is neither the
/// banner, a summary nor an indented detail, with the "at ..." line after it when there is one;
/// empty when the log holds none.
std::string first_sanitizer_report(std::string_view log);

} // namespace rpl::workers
