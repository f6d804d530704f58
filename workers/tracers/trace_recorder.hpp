#pragma once
/// The tracer seam: how `rocm-perf profile` records one run of an application. A recorder runs an
/// argv once and leaves the rocpd databases it produced in a folder (rocprofv3 on AMD, our CUPTI
/// tracer on NVIDIA), or records only the wall time (timing). Everything downstream reads the
/// databases, never the recorder. Implementations: rocprofv3/, cuda/, timing/; cupti/ is the
/// injection library the cuda recorder loads into the application.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rpl::workers {

/// How one recorded run ended.
enum class record_status : std::uint8_t {
  recorded = 0,   ///< the run succeeded (its databases, if the recorder traces, are in the folder)
  run_failed = 1, ///< the application or the tracer failed, was killed, timed out or did not start
  no_trace = 2,   ///< the run succeeded but left no database: nothing traceable happened
};

/// The outcome of one run.
struct recorded_run {
  record_status status = record_status::recorded;
  /// The rocpd files under the run's folder, sorted (the order rocpd::reader gives a folder); none
  /// for the timing recorder.
  std::vector<std::filesystem::path> databases;
  std::chrono::nanoseconds wall{0}; ///< the whole run, tracer start-up included
  /// When not recorded: what failed and a fix, as a sentence that follows "run N: ", e.g.
  /// "rocprofv3 exited with status 1; fix: run with --debug to see rocprofv3's output\n<its
  /// output>".
  std::string reason;
  /// Processes the run left running when it ended (daemons, background jobs): killed then
  /// (child_options::reap_descendants); the run itself still counts.
  std::vector<pid_t> leftovers;

  bool recorded() const { return status == record_status::recorded; }
};

class trace_recorder {
public:
  virtual ~trace_recorder() = default;
  /// Runs `argv` once with its trace going to `folder` (created when missing; unused by timing).
  /// `run` (from 1) names the run where the recorder echoes output. Expected failures come back
  /// as a status with a reason; nothing is thrown for them.
  virtual recorded_run record(const std::vector<std::string>& argv,
                              const std::filesystem::path& folder,
                              unsigned run) = 0;
};

using trace_recorder_ptr = std::unique_ptr<trace_recorder>;

} // namespace rpl::workers
