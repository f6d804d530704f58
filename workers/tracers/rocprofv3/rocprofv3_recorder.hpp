#pragma once
/// The AMD recorder: `rocprofv3 --kernel-trace --output-format rocpd -d FOLDER -- APP...`, which
/// writes FOLDER/<hostname>/<pid>_results.db per process.

#include <chrono>
#include <filesystem>
#include <optional>

#include "workers/tracers/trace_recorder.hpp"

namespace rpl::workers {

struct rocprofv3_options {
  std::filesystem::path executable;                          ///< rocprofv3 (find_rocprofv3)
  std::chrono::milliseconds timeout{std::chrono::hours(24)}; ///< per run, rocprofv3 included
  bool echo_output = false; ///< copy rocprofv3's output to stderr (profile's --debug)
  /// More changes to the application's environment (a lane's CUDA_VISIBLE_DEVICES). `{}`: a
  /// designated initializer may leave it out without -Wmissing-field-initializers.
  std::vector<std::pair<std::string, std::optional<std::string>>> environment{};
};

/// `explicit_path` when given, else $ROCPROFV3, else the first executable rocprofv3 on PATH;
/// nullopt when there is none.
std::optional<std::filesystem::path> find_rocprofv3(const std::filesystem::path& explicit_path);

class rocprofv3_recorder final : public trace_recorder {
public:
  explicit rocprofv3_recorder(rocprofv3_options options);
  /// A failed run's reason quotes the end of rocprofv3's output. A run that succeeds without
  /// writing a database is `recorded` with none: the reader says what is missing.
  recorded_run record(const std::vector<std::string>& argv,
                      const std::filesystem::path& folder,
                      unsigned run) override;

private:
  rocprofv3_options options_;
};

} // namespace rpl::workers
