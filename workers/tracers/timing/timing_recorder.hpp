#pragma once
/// The timing recorder: runs the application alone and keeps only its wall time (start-up
/// included). It writes no database, so it works for any program on any machine; what it measures
/// is whole processes, not kernels.

#include <chrono>

#include "workers/tracers/trace_recorder.hpp"

namespace rpl::workers {

struct timing_recorder_options {
  std::chrono::milliseconds timeout{std::chrono::hours(24)}; ///< per run
  bool echo_output = false; ///< copy the application's output to stderr (profile's --debug)
};

class timing_recorder final : public trace_recorder {
public:
  explicit timing_recorder(timing_recorder_options options);
  /// `folder` is not used; `wall` is the measurement.
  recorded_run record(const std::vector<std::string>& argv,
                      const std::filesystem::path& folder,
                      unsigned run) override;

private:
  timing_recorder_options options_;
};

} // namespace rpl::workers
