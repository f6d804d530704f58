#pragma once
/// Builds a comparison from what each side's analysis produced (the profile report, the launch
/// samples, the last run's critical path, the counters): launches matched (kernel_matching), each
/// pair's median ratio and interval (median_ratio), its verdict (compare_verdict) and why it
/// changed (change_reasons). The critical-path effect of each changed kernel is the DAG's what-if
/// (stages/analysis/timeline_dag), asked in two steps so that the caller can run each side's
/// replays on its own thread: plan_what_if, then what_if_each per side, then apply_what_if.
///
/// The what-if question per changed kernel:
/// - slower (ratio r > 1): on NEW's timeline, the saving if the kernel were (1 - 1/r) faster, i.e.
///   back at BASE's speed: what its slowdown costs NEW's critical path;
/// - faster (r < 1): on BASE's timeline, the saving if it were (1 - r) faster: what its speed-up
///   gave. A kernel off the critical path saves (costs) nothing, and the note says so.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "stages/analysis/profile_report.hpp"
#include "stages/analysis/timeline_dag.hpp"
#include "stages/compare/comparison.hpp"
#include "stages/compare/launch_samples.hpp"
#include "stages/trace/counter_values.hpp"

namespace rpl::stages::compare {

/// One side's analysis; `summary` carries inputs, runs, databases and counters (the builder
/// fills the figures). Pointers other than `report` and `launches` may be null.
struct side_input {
  side_summary summary;
  const profile_report* report = nullptr;
  const std::vector<launch_samples>* launches = nullptr;
  const analysis::critical_path_result* path = nullptr; ///< of the side's last run
  const std::map<std::string, rocpd::kernel_counters>* counters = nullptr; ///< by kernel_key
};

struct compare_settings {
  double noise = 0.02;      ///< --noise: the least band of `same`, a fraction
  double confidence = 0.95; ///< of the ratio's interval
};

/// Matches, measures and judges every launch; the critical-path effects are left to the what-if.
comparison
build_comparison(const side_input& base, const side_input& next, const compare_settings& settings);

/// The questions for one side's timeline: kernel names, how much faster, and for which row.
struct what_if_questions {
  std::vector<std::string> names;
  std::vector<double> percents;
  std::vector<std::size_t> rows; ///< indices into comparison::kernels
};

struct what_if_plan {
  what_if_questions base; ///< faster kernels, asked on BASE's timeline
  what_if_questions next; ///< slower kernels, asked on NEW's timeline
};

/// Each side's replays cost one pass over its ops: at most `top` changed kernels are asked, the
/// largest changes of time first (the others say they were not estimated).
what_if_plan plan_what_if(const comparison& c, std::size_t top = 20);

/// Fills critical_path_effect_ns and the notes from the savings what_if_each gave (one per
/// question, in order), then sorts the rows as comparison::kernels says.
void apply_what_if(comparison& c,
                   const what_if_plan& plan,
                   const std::vector<double>& base_savings,
                   const std::vector<double>& next_savings);

/// Sorts the rows: slower (largest critical-path cost, then time), faster, ambiguous, new, gone,
/// same (each by time).
void sort_rows(comparison& c);

} // namespace rpl::stages::compare
