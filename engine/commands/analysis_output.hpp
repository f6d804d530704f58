#pragma once
/// What `profile` and `analyze` add to the profile report: the analysis of what limits the
/// application (analysis.json, the text section), the Perfetto trace (--perfetto) and the HTML
/// report (--report), computed from the same databases. The analyses and their assembly are in
/// stages/analysis/; this file reads their inputs from the databases and files.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/analysis/application_analysis.hpp"
#include "stages/analysis/html_report.hpp"
#include "stages/analysis/perfetto_trace.hpp"
#include "stages/analysis/profile_report.hpp"
#include "stages/analysis/roofline_report.hpp"
#include "stages/trace/counter_values.hpp"
#include "stages/trace/rocpd_timeline.hpp"

namespace rpl::engine::commands {

/// The databases behind a report, sorted by role (stages/trace/counter_passes.hpp).
struct analysis_inputs {
  std::vector<std::filesystem::path> timeline; ///< one run's files: the DAG, the timeline
  /// The timeline of those files when the report's scan already built it
  /// (build_profile_report_and_timeline): the dispatch table is then not read a second time.
  std::shared_ptr<const stages::rocpd::timeline> timeline_read;
  std::vector<std::filesystem::path> counters; ///< counter passes
  /// Their counters when the report's scan already read them (report_context::counter_files):
  /// they are then not read a second time.
  std::shared_ptr<const std::map<std::string, stages::rocpd::kernel_counters>> counters_read;
  std::vector<std::string> notes; ///< caveats to carry into the outputs
  /// Also build the per-dispatch timeline (--perfetto, --report): a million dispatches cost a few
  /// hundred MB as timeline ops, so only when asked.
  bool want_timeline = false;
  /// Also build dag.json (--out writes it): the critical path's ops as JSON, a few MB for a
  /// million dispatches, so only when it is written.
  bool want_dag = true;
  /// Roofline peaks to use instead of configs/arch's ("hbm" bytes/s, or a data type's FLOP/s).
  std::map<std::string, double> peak_overrides;
  /// AMD thread-trace outputs (rocprofv3 --att: folders, stats_*.csv or code.json files), whose
  /// stall summaries join the kernels by name.
  std::vector<std::filesystem::path> thread_traces;
};

struct analysis_outputs {
  stages::analysis::application_analysis analysis;
  nlohmann::json dag;                         ///< dag.json; null unless want_dag
  stages::analysis::roofline_report roofline; ///< roofline.json (to_json)
  std::vector<stages::analysis::timeline_op> ops;
  std::vector<stages::analysis::timeline_flow> flows;
  stages::analysis::html_report_input page;
};

/// Runs the analyses. Throws rocpd_error for unreadable databases and thread_trace_error for
/// unreadable thread traces (exit 2 by the caller).
analysis_outputs analyze_application(const stages::profile_report& report,
                                     const analysis_inputs& inputs);

} // namespace rpl::engine::commands
