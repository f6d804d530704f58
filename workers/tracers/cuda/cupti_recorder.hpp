#pragma once
/// The NVIDIA recorder: runs the application with our CUPTI tracer injected
/// (CUDA_INJECTION64_PATH = the library of workers/tracers/cupti/, RPL_TRACE_DIR = the folder), so
/// that every CUDA process writes FOLDER/<hostname>/<pid>_results.db as rocprofv3 would. Only the
/// child's environment changes; the engine's own never does.
///
/// At the timeout the application's process group gets SIGTERM first, which the tracer catches to
/// write its database a last time, and SIGKILL only `term_grace` later. A run that fails (a crash,
/// a non-zero exit, the timeout) still lists the databases its processes left: the tracer writes
/// them while the application runs, so they hold the trace up to the end (partial: see
/// stages/trace/trace_completeness.hpp).

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "workers/tracers/trace_recorder.hpp"

namespace rpl::workers {

struct cupti_recorder_options {
  std::filesystem::path library; ///< librpl_cupti_tracer.so (find_cupti_tracer)
  std::chrono::milliseconds timeout{std::chrono::hours(24)}; ///< per run
  bool echo_output = false; ///< copy the application's output to stderr (profile's --debug)
  /// After the timeout's SIGTERM, how long the application may take to die (the tracer's last
  /// write) before SIGKILL. Longer than the tracer's RPL_CUPTI_SIGNAL_WAIT_MS (3 s by default).
  std::chrono::milliseconds term_grace{std::chrono::seconds(5)};
  /// More changes to the application's environment (a lane's CUDA_VISIBLE_DEVICES).
  std::vector<std::pair<std::string, std::optional<std::string>>> environment{};
};

/// `explicit_path` when given, else $RPL_CUPTI_TRACER, else librpl_cupti_tracer.so in lib/ beside
/// this executable's bin/, beside the executable, or in lib/ below it; nullopt when there is none.
std::optional<std::filesystem::path> find_cupti_tracer(const std::filesystem::path& explicit_path);

class cupti_recorder final : public trace_recorder {
public:
  explicit cupti_recorder(cupti_recorder_options options);
  /// `no_trace` when the application succeeded but no process of it used CUDA; `run_failed` with
  /// the databases it left (maybe none) when it failed.
  recorded_run record(const std::vector<std::string>& argv,
                      const std::filesystem::path& folder,
                      unsigned run) override;

private:
  cupti_recorder_options options_;
};

} // namespace rpl::workers
