#pragma once
/// Builds a profile_report: from the rocpd databases of one or more runs (profile's rocm and cuda
/// backends, and analyze), or from whole-process wall times (the timing backend). The figures come
/// from stages/trace (reader, runtime accounting) and stages/hardware (resources, occupancy).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "stages/analysis/profile_report.hpp"
#include "stages/trace/counter_values.hpp"
#include "stages/trace/rocpd_timeline.hpp"

namespace rpl::stages {

/// The databases hold nothing to report (no kernel dispatch at all). The message names the files
/// and a fix. Unreadable or foreign databases throw rocpd::rocpd_error instead.
class report_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// What a report is about, beyond the databases.
struct report_context {
  std::string backend{};                             ///< "rocm", "cuda" or "rocpd"
  std::optional<std::vector<std::string>> command{}; ///< the profiled argv; none for analyze
  /// The target for occupancy (any spelling load_arch accepts); empty: each kernel's agent.
  std::string arch{};
  /// Counter passes among the runs' files (database_roles::counters) whose counters
  /// build_profile_report_and_timeline reads in the same pass (report_and_timeline::counters).
  std::vector<std::filesystem::path> counter_files{};
};

/// Reads `runs` (each run: rocpd files or folders of them) and builds the report. Stability is
/// across runs (each run's GPU total of user kernels); everything else is over all runs together.
/// Throws rocpd::rocpd_error for unreadable input and report_error when no run has a dispatch.
profile_report build_profile_report(const std::vector<std::vector<std::filesystem::path>>& runs,
                                    const report_context& context);

/// A report and the timeline of its last run (what the analyses' critical path and idle times
/// read), both from the report's one pass over each dispatch table.
struct report_and_timeline {
  profile_report report;
  rocpd::timeline timeline; ///< of the files of runs.back()
  /// The counters of context.counter_files, as read_kernel_counters gives them, from the report's
  /// scan of their dispatches and plain scans of their rocpd_pmc_event tables on the side thread
  /// (then on both: rocpd::counter_collector); nullopt when none were asked for or they are not
  /// all among the runs' files in the order given (then read_kernel_counters reads them).
  std::optional<std::map<std::string, rocpd::kernel_counters>> counters;
};

/// build_profile_report, with the last run's timeline built from the same scan of its dispatches
/// (rocpd::timeline_builder) instead of a second one. With `side_thread`, the timeline's other
/// tables (copies, synchronization) are read on a second thread while the dispatches are scanned
/// (the commands do; on 2 cores that hides most of their cost). Throws as build_profile_report
/// does, and rocpd::rocpd_error for a file whose copies or synchronization cannot be read.
/// `also`, when set, sees every dispatch row of every run as the scan reads it (its `database`
/// indexes the runs' files in order, directories expanded), for a caller that keeps more per
/// dispatch than the report does (compare keeps each launch shape's durations).
report_and_timeline
build_profile_report_and_timeline(const std::vector<std::vector<std::filesystem::path>>& runs,
                                  const report_context& context,
                                  bool side_thread = false,
                                  const std::function<void(const rocpd::dispatch_row&)>& also = {});

/// The timing backend's report: `wall_ns` holds one process wall time per run; no kernels, and a
/// note that says these are not kernel times.
profile_report timing_profile_report(std::vector<std::string> command,
                                     std::span<const std::int64_t> wall_ns);

} // namespace rpl::stages
