#pragma once
/// What `rocm-perf compare BASE NEW` found, as plain values: each side's application figures (GPU
/// time, critical path), and per kernel launch its dispatch counts, medians, the ratio with its
/// interval, the verdict, its effect on the critical path and why it changed. comparison_builder
/// fills it; to_json gives docs/schema/compare.schema.json, compare_text the table and Markdown.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stages/compare/compare_verdict.hpp"

namespace rpl::stages::compare {

/// One side (BASE or NEW) as a whole.
struct side_summary {
  std::vector<std::string> inputs;    ///< the paths given, one per run
  std::vector<std::string> databases; ///< the rocpd files read (counter passes included)
  std::size_t runs = 0;
  std::size_t dispatches = 0; ///< user kernels' dispatches over all runs
  double gpu_time_ns = 0;     ///< user kernels' GPU time, the median over runs
  /// The last run's critical path and makespan (first start to last end).
  std::optional<double> critical_path_ns;
  std::optional<double> makespan_ns;
  bool counters = false; ///< counter passes were read
  /// A results store's side (autotune --db): the run compared, each configuration a row, its
  /// samples the lane's measurements; no timeline. Empty for traces.
  std::string store_run;
};

/// One kernel launch (a name, or a name with one launch shape) on both sides.
struct kernel_change {
  std::string name;
  std::string base_shape; ///< "grid 4096 block 256" when matched by shape or on one side only
  std::string new_shape;
  std::size_t base_dispatches = 0;
  std::size_t new_dispatches = 0;
  std::optional<double> base_median_ns;
  std::optional<double> new_median_ns;
  double base_total_ns = 0; ///< per run (the side's total over its runs)
  double new_total_ns = 0;
  ratio_interval interval; ///< meaningful for matched launches
  double noise = 0;        ///< the band used: max(--noise, the measured noise)
  double measured_noise = 0;
  kernel_verdict verdict = kernel_verdict::same;
  /// How much longer (positive) or shorter the NEW critical path is because of this kernel's
  /// change (the DAG what-if); absent where not estimated.
  std::optional<double> critical_path_effect_ns;
  std::string critical_path_note; ///< one sentence on that effect
  std::vector<std::string> reasons;
};

struct comparison {
  side_summary base;
  side_summary next;
  double noise_floor = 0.02; ///< --noise
  double confidence = 0.95;
  /// Slower first (largest critical-path cost, then time), then faster, ambiguous, new, gone,
  /// same.
  std::vector<kernel_change> kernels;
  std::vector<std::string> notes;
};

/// How many kernels have `verdict`.
std::size_t count(const comparison& c, kernel_verdict verdict);

/// docs/schema/compare.schema.json: {"schema_version": "1.0", "base", "new", "noise",
/// "confidence", "application": {...}, "kernels": [...], "summary": {verdict: count}, "notes"}.
/// Times in nanoseconds.
nlohmann::json to_json(const comparison& c);

} // namespace rpl::stages::compare
