#pragma once
/// Fills an application_analysis from the profile report (runtime, grid and occupancy per kernel)
/// and what the other analyses found per kernel name (the roofline's percent of peak, the
/// critical path's time and slack, counters for divergence and the stream's idle time before each
/// dispatch), then classifies every kernel. The sources are plain values, so each analysis can be
/// tested apart and this join has no file access.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/analysis/application_analysis.hpp"
#include "stages/analysis/memory_access.hpp"
#include "stages/analysis/profile_report.hpp"

namespace rpl::stages::analysis {

/// What the roofline, the critical path and the counters say about one kernel name.
struct kernel_findings {
  nlohmann::json roofline;      ///< roofline.json's kernel object; null when there is none
  std::string roofline_missing; ///< why there is none
  std::optional<double> compute_pct;
  std::optional<double> memory_pct;
  std::optional<double> active_thread_fraction;
  std::optional<double> issue_active;
  std::string top_stall;
  std::optional<double> top_stall_share;
  std::string stall_source;    ///< bottleneck_inputs::stall_source
  nlohmann::json thread_trace; ///< analysis.json's thread_trace object; null without one
  std::optional<double> critical_path_ns;
  std::optional<double> min_slack_ns;
  std::vector<what_if_estimate> what_if;
  std::optional<double> mean_idle_before_ns; ///< its stream idle just before each dispatch
  memory_access access;                      ///< global accesses' use of the caches, counted
};

struct analysis_sources {
  const profile_report* report = nullptr;
  /// CUs (SMs) of the GPU the kernels ran on, for the grid's waves; nullopt: waves unknown.
  std::optional<double> compute_units;
  std::map<std::string, kernel_findings> kernels; ///< by kernel name
  std::optional<double> critical_path_ns;
  std::optional<double> critical_path_busy_ns;
  std::optional<double> makespan_ns;
  std::vector<std::string> notes;
};

/// One entry per user kernel of the report, in the report's order (total time, descending), then
/// ordered by critical-path time where there is a critical path.
application_analysis build_application_analysis(const analysis_sources& sources,
                                                const bottleneck_thresholds& thresholds);

/// The grid's blocks over the blocks all CUs hold at once; nullopt without a grid, an occupancy
/// or the CU count.
std::optional<double> waves_per_cu(const kernel_report& kernel,
                                   const std::optional<double>& compute_units);

} // namespace rpl::stages::analysis
