#pragma once
/// What `profile` and `analyze` share after the report is built: where it goes (profile.json under
/// --out) and how it is printed (--json, --quiet, or the text table).

#include <filesystem>
#include <string>
#include <vector>

#include "engine/commands/analysis_output.hpp"
#include "stages/analysis/profile_report.hpp"

namespace rpl::engine::commands {

/// The report options both verbs take.
struct report_options {
  bool json = false;              ///< print strict JSON (docs/schema/profile.schema.json)
  bool quiet = false;             ///< print only the runtime in ms
  std::filesystem::path out;      ///< write profile.json here when set
  std::string arch;               ///< override the agents' targets for occupancy
  std::filesystem::path perfetto; ///< write the Chrome/Perfetto trace here when set
  std::filesystem::path html;     ///< write the HTML report here when set
  /// --peak KEY=VALUE: roofline peaks instead of configs/arch's ("hbm" in bytes/s, or a data type
  /// of roofline.json's peaks, e.g. fp32, bf16_tensor, mfma_f16, in FLOP/s).
  std::vector<std::string> peaks;
  /// --thread-trace PATH: AMD thread-trace outputs (rocprofv3 --att) for the stall summaries.
  std::vector<std::filesystem::path> thread_traces;
};

/// Writes profile.json under `options.out` (when set), then prints the report. With `inputs`, also
/// analyzes the application (analysis_output.hpp): analysis.json under --out, the "what limits
/// this application" section of the text, --perfetto and --report. Returns the exit code: 0, or 2
/// when a file cannot be written or a database cannot be read (said on stderr).
int emit_report(const stages::profile_report& report,
                const report_options& options,
                const analysis_inputs* inputs = nullptr);

} // namespace rpl::engine::commands
