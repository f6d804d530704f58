#pragma once
/// The report of `rocm-perf profile` and `rocm-perf analyze`, as plain values: per-kernel runtime
/// from trace timestamps, stability across runs, the dispatch groups, each kernel's resources and
/// theoretical occupancy. profile_report_builder.hpp fills it from rocpd databases (or from
/// whole-process wall times); to_json() gives docs/schema/profile.schema.json and report_text.hpp
/// the terminal table. Times stay in nanoseconds here; the renderers convert.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stages/analysis/kernel_occupancy.hpp"
#include "stages/statistics/statistics.hpp"
#include "stages/trace/runtime_accounting.hpp"

namespace rpl::stages {

/// A GPU agent the trace saw (one entry per name and logical index, over all files).
struct report_agent {
  std::string name;         ///< "gfx90a", "sm_90"
  std::string product_name; ///< "AMD Instinct MI210"
  std::int64_t logical_index = 0;
};

/// How repeatable the per-run total is: GPU time of user kernels, or (timing backend) the
/// process wall time.
struct report_stability {
  std::vector<double> per_run_ns;
  double mean_ns = 0;
  double median_ns = 0; ///< the report's runtime
  double stddev_ns = 0; ///< sample stddev (n - 1)
  double cv = 0;
  stability_class classification = stability_class::stable;
};

/// Figures over every dispatch of every run.
struct report_totals {
  double gpu_time_ns = 0;        ///< user kernels
  double helper_gpu_time_ns = 0; ///< runtime helper kernels (blits, fills)
  double wall_span_ns = 0;       ///< first start to last end
  std::size_t dispatches = 0;    ///< helpers included
  std::vector<rocpd::group_total> per_agent;
  std::vector<rocpd::group_total> per_queue;
  std::vector<rocpd::group_total> per_stream;
  std::vector<rocpd::group_total> per_process;
};

/// A kernel symbol's resources as the trace recorded them (rocpd's columns, unconverted: on
/// NVIDIA agents `vgpr` holds registers per thread and `lds_bytes` static shared memory).
struct symbol_resources {
  std::int64_t vgpr = 0; ///< arch_vgpr_count
  std::int64_t agpr = 0; ///< accum_vgpr_count
  std::int64_t sgpr = 0;
  std::int64_t lds_bytes = 0;     ///< static group segment
  std::int64_t scratch_bytes = 0; ///< private segment per work-item
  std::int64_t kernarg_bytes = 0;
};

using dim3 = std::array<std::uint32_t, 3>;

/// One kernel name over all its dispatches.
struct kernel_report {
  rocpd::kernel_stats runtime;
  double share = 0; ///< of the user kernels' GPU time (0 when there is none)
  dim3 block{};     ///< the most common workgroup size (with launch_lds_bytes: occupancy's launch)
  dim3 grid{};      ///< the most common grid size
  std::optional<symbol_resources> resources; ///< absent when the trace has no symbol row
  /// LDS (shared memory) per workgroup of the launch occupancy describes: the dispatches', dynamic
  /// included (the symbol's `lds_bytes` is the static part only). Absent without dispatch sizes.
  std::optional<std::int64_t> launch_lds_bytes;
  /// Absent for helper kernels, without a symbol, or when no architecture model applies.
  std::optional<kernel_occupancy> occupancy;
  std::optional<std::string> occupancy_note; ///< why there is no occupancy (an unknown target)
};

/// Everything profile.json holds.
struct profile_report {
  std::string backend; ///< "rocm", "cuda", "rocpd" (analyze) or "timing"
  std::optional<std::vector<std::string>> command; ///< the profiled argv; absent for analyze
  std::vector<std::string> databases;              ///< the rocpd files read, in reading order
  std::vector<report_agent> agents;
  report_stability stability;
  std::optional<report_totals> totals;       ///< absent for the timing backend, which has no trace
  std::vector<kernel_report> kernels;        ///< user kernels, by total time descending
  std::vector<kernel_report> helper_kernels; ///< runtime helpers, same order
  std::string dominant_kernel;     ///< the user kernel with the largest total; empty if none
  std::optional<std::string> note; ///< a caveat about the figures (the timing backend's)
  /// Some run's trace may miss activity: its application ended abnormally, or a database says it
  /// is not the process's final write (trace_completeness.hpp). The figures cover what was kept.
  bool partial = false;
  /// Why, one sentence each: "run 2: ./app was killed by SIGABRT (Aborted)", "<file>: the
  /// tracer's last checkpoint: ...". Empty unless `partial`.
  std::vector<std::string> partial_reasons;
};

/// docs/schema/profile.schema.json, times in milliseconds. The single-kernel fields ("kernel",
/// "resources", "occupancy") describe the dominant kernel; "roofline" is null until it exists.
nlohmann::json to_json(const profile_report& report);

/// A time in milliseconds, as every renderer prints it.
inline double milliseconds(double ns) {
  return ns / 1e6;
}

} // namespace rpl::stages
