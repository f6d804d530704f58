#pragma once
/// What limits one kernel, as a class with its evidence: deterministic rules over the roofline
/// position (percent of the compute and memory peaks), occupancy, the grid's waves, divergence and
/// how long the kernel's stream sits idle between its dispatches. The same inputs always give the
/// same label; each label names the rule that fired, the thresholds it compared against (from
/// configs/analysis/bottleneck.json) and the measured values, and says what to try next.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/analysis/memory_access.hpp"

namespace rpl::stages::analysis {

enum class bottleneck_class {
  memory_bandwidth_bound,
  compute_throughput_bound,
  latency_bound,
  under_occupied,
  divergence_limited,
  launch_overhead_bound,
  balanced,
  /// Global accesses that fetch far more than the threads use (memory_access.hpp): the L1/L2
  /// traffic, not the DRAM bandwidth or the block count, is what to fix.
  memory_uncoalesced,
};

/// "memory-bandwidth bound", "launch-overhead bound", ...
std::string_view to_string(bottleneck_class c);
/// "memory_bandwidth_bound", ...: the JSON value.
std::string_view to_id(bottleneck_class c);

/// The thresholds, each as configs/analysis/bottleneck.json gives it.
struct bottleneck_thresholds {
  double sol_high_pct = 80;
  double sol_low_pct = 60;
  double sol_gap_pct = 10;
  double min_waves_per_cu = 1;
  double under_occupied_max_occupancy = 0.25;
  double divergence_min_active_fraction = 0.75;
  double launch_idle_share = 0.5;
  double stall_share = 0.3;
  /// NVIDIA: more sectors per global request than this (16: a warp's 16-byte accesses to
  /// consecutive addresses; 4-byte ones fill 4) is uncoalesced.
  double uncoalesced_min_sectors_per_request = 16;
  /// AMD: rocprof-compute's vL1D Coalescing under this (%) is uncoalesced.
  double uncoalesced_max_coalescing_pct = 50;

  /// The embedded configs/analysis/bottleneck.json (throws std::runtime_error naming the key when
  /// a value is missing or not a number: a broken build, not a user error).
  static bottleneck_thresholds defaults();
  /// Reads a file of the same shape (a "values" object of {"value", "source"}); absent keys keep
  /// the defaults. Throws std::runtime_error naming the key and the problem.
  static bottleneck_thresholds from_json(const nlohmann::json& config);
};

/// What is known about one kernel (per kernel name); every field may be missing.
struct bottleneck_inputs {
  /// Achieved compute throughput, % of the applicable peak (roofline), and what it was taken from.
  std::optional<double> compute_pct;
  /// Achieved DRAM/HBM bandwidth, % of peak (roofline).
  std::optional<double> memory_pct;
  /// Theoretical occupancy: resident waves (warps) per SIMD (SM sub-partition) over the maximum.
  std::optional<double> occupancy;
  /// What limits the occupancy ("registers", "lds", ...), for the next step.
  std::string occupancy_limiter;
  /// Blocks of the grid over the blocks all CUs/SMs hold at once
  /// (launch__waves_per_multiprocessor).
  std::optional<double> waves_per_cu;
  /// Average active threads per executed warp instruction over the warp size (0..1), from counters.
  std::optional<double> active_thread_fraction;
  /// Mean time the kernel's stream was idle just before each of its dispatches, and the mean
  /// duration of the dispatches (ns).
  std::optional<double> mean_idle_before_ns;
  std::optional<double> mean_duration_ns;
  /// Instructions issued per active cycle of a scheduler (0..1; Nsight Compute's
  /// smsp__issue_active.avg.per_cycle_active), when counted.
  std::optional<double> issue_active;
  /// The warp stall reason that holds the largest part of the latency per issued instruction
  /// ("long_scoreboard", ...), and that part (0..1), when counted.
  std::string top_stall;
  std::optional<double> top_stall_share;
  /// Where the stall came from: empty for Nsight Compute's warp stalls (a share of the latency
  /// per issued instruction); "thread trace" for an AMD thread trace's categories
  /// (stages/trace/thread_trace.hpp: vmem_wait, lds_smem_wait, barrier, mfma, ...; a share of the
  /// traced waves' cycles).
  std::string stall_source;
  /// Global accesses (memory_access.hpp): NVIDIA L1 sectors per request, AMD vL1D coalescing
  /// (%), and the cache levels' throughput (% of their peak) where counted. Its DRAM figure is
  /// not read here: memory_pct is the DRAM's share of the roof.
  memory_access access;
};

/// One kernel's class with its evidence, or no class and the reason (too little was measured).
struct bottleneck_label {
  std::optional<bottleneck_class> label;
  std::string rule;    ///< which rule fired, e.g. "sol.both_low.latency"
  std::string because; ///< the comparison in words, with the numbers
  nlohmann::json thresholds = nlohmann::json::object(); ///< the thresholds the rule compared
  nlohmann::json measured = nlohmann::json::object();   ///< the inputs it used
  std::string next_step;                                ///< what to try
  std::string missing; ///< when there is no label: what was missing and how to get it
};

/// Classifies one kernel. Rules, first match wins:
///  1. launch-overhead bound: idle before dispatches / (idle + duration) >= launch_idle_share.
///  1b. memory: uncoalesced: sectors per request > uncoalesced_min_sectors_per_request or vL1D
///     coalescing < uncoalesced_max_coalescing_pct, unless compute runs near its peak
///     (>= sol_high_pct) ahead of every memory level.
///  2. Without compute_pct and memory_pct: under-occupied when waves < min_waves_per_cu or
///     occupancy <= under_occupied_max_occupancy; otherwise no label (counters needed).
///  3. max(compute, memory) >= sol_high_pct: compute-throughput bound (compute >= memory;
///  divergence
///     limited instead when active_thread_fraction < divergence_min_active_fraction) or
///     memory-bandwidth bound.
///  4. both < sol_low_pct: memory-bandwidth bound at a cache level when the L1 or L2 throughput is
///     >= sol_high_pct (the DRAM is not where the bytes move), else under-occupied (small grid or
///     low occupancy, as in 2), else divergence limited (as in 3), else latency bound.
///  5. |compute - memory| >= sol_gap_pct: the higher one's class, as in 3.
///  6. balanced.
bottleneck_label classify(const bottleneck_inputs& in, const bottleneck_thresholds& t);

nlohmann::json to_json(const bottleneck_label& label);

} // namespace rpl::stages::analysis
