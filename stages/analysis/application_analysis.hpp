#pragma once
/// What limits an application, per kernel name: its time, its share of the critical path and what
/// making it faster would save, its roofline position, its occupancy and its bottleneck class with
/// the evidence. analysis.json (docs/schema/analysis.schema.json) and the text report's "what
/// limits this application" section are rendered from it; the builder that fills it from the
/// databases lives with the other analyses (analysis_builder.hpp).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/analysis/bottleneck.hpp"

namespace rpl::stages::analysis {

/// The end-to-end saving if a kernel were `faster_pct` % faster.
struct what_if_estimate {
  double faster_pct = 0;
  double saving_ns = 0;
};

struct kernel_analysis {
  std::string name;
  std::size_t dispatches = 0;
  double total_ns = 0;
  double share = 0; ///< of the user kernels' GPU time, 0..1
  /// Time this kernel's dispatches spend on the critical path, and its share of the path's length.
  std::optional<double> critical_path_ns;
  std::optional<double> critical_path_share;
  std::optional<double> min_slack_ns; ///< the least slack of its dispatches (0: on the path)
  std::vector<what_if_estimate> what_if;
  /// The kernel's roofline object (roofline.json's), or null with `roofline_missing` saying why.
  nlohmann::json roofline;
  std::string roofline_missing;
  /// The thread trace's stall summary (analysis.json's thread_trace), or null without one.
  nlohmann::json thread_trace;
  bottleneck_inputs inputs;
  bottleneck_label bottleneck;
};

struct application_analysis {
  /// Assumptions and caveats, one sentence each ("no synchronization records: ...").
  std::vector<std::string> notes;
  std::optional<double> critical_path_ns;      ///< the path's length over all segments
  std::optional<double> critical_path_busy_ns; ///< of which ops ran (the rest the GPU waited)
  std::optional<double> makespan_ns;           ///< first op start to last op end
  std::vector<kernel_analysis> kernels; ///< by critical-path time, then total time, descending
};

/// analysis.json: {"schema_version": "1.0", "notes", "critical_path_ns", "makespan_ns",
/// "kernels": [...], "limits": [the top kernels by critical-path share: name, share, class, next
/// step]}.
nlohmann::json to_json(const application_analysis& analysis);

/// The kernels that limit the application: those with the largest critical-path share (total time
/// where there is no critical path), at most `top`, each with a share above zero.
std::vector<const kernel_analysis*> limiting_kernels(const application_analysis& analysis,
                                                     std::size_t top = 5);

/// The text report's section:
///   What limits this application (critical path 12.3 ms of 13.0 ms):
///     1. ms_spin_c      61.2 % of the critical path  latency bound: ...; next: ...
nlohmann::json limits_json(const application_analysis& analysis, std::size_t top = 5);
std::string limits_text(const application_analysis& analysis, std::size_t top = 5);

} // namespace rpl::stages::analysis
