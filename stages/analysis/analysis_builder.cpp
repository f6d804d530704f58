#include "stages/analysis/analysis_builder.hpp"

#include <algorithm>
#include <cmath>

namespace rpl::stages::analysis {

std::optional<double> waves_per_cu(const kernel_report& kernel,
                                   const std::optional<double>& compute_units) {
  if (!kernel.occupancy || !compute_units || *compute_units <= 0)
    return std::nullopt;
  double blocks = 1;
  for (int i = 0; i < 3; ++i) {
    if (kernel.block[static_cast<std::size_t>(i)] == 0)
      return std::nullopt;
    // rocpd grids are in work-items: blocks per dimension, rounded up.
    const double items = kernel.grid[static_cast<std::size_t>(i)];
    const double per_block = kernel.block[static_cast<std::size_t>(i)];
    blocks *= std::max(1.0, std::ceil(items / per_block));
  }
  const double resident = kernel.occupancy->result.active_workgroups_per_cu * *compute_units;
  if (resident <= 0)
    return std::nullopt;
  return blocks / resident;
}

application_analysis build_application_analysis(const analysis_sources& sources,
                                                const bottleneck_thresholds& thresholds) {
  application_analysis out;
  out.notes = sources.notes;
  out.critical_path_ns = sources.critical_path_ns;
  out.critical_path_busy_ns = sources.critical_path_busy_ns;
  out.makespan_ns = sources.makespan_ns;
  if (sources.report == nullptr)
    return out;
  for (const kernel_report& k : sources.report->kernels) {
    kernel_analysis a;
    a.name = k.runtime.name;
    a.dispatches = k.runtime.count;
    a.total_ns = k.runtime.total_ns;
    a.share = k.share;
    const auto found = sources.kernels.find(a.name);
    const kernel_findings none;
    const kernel_findings& f = found == sources.kernels.end() ? none : found->second;
    a.roofline = f.roofline;
    a.roofline_missing = f.roofline.is_null()
                             ? (f.roofline_missing.empty()
                                    ? "no counters for this kernel: record them with `rocm-perf "
                                      "profile --counters roofline`"
                                    : f.roofline_missing)
                             : std::string();
    a.critical_path_ns = f.critical_path_ns;
    if (f.critical_path_ns && sources.critical_path_ns && *sources.critical_path_ns > 0)
      a.critical_path_share = std::clamp(*f.critical_path_ns / *sources.critical_path_ns, 0.0, 1.0);
    a.min_slack_ns = f.min_slack_ns;
    a.what_if = f.what_if;
    bottleneck_inputs& in = a.inputs;
    in.compute_pct = f.compute_pct;
    in.memory_pct = f.memory_pct;
    in.active_thread_fraction = f.active_thread_fraction;
    in.issue_active = f.issue_active;
    in.top_stall = f.top_stall;
    in.top_stall_share = f.top_stall_share;
    in.stall_source = f.stall_source;
    in.access = f.access;
    a.thread_trace = f.thread_trace;
    if (k.occupancy) {
      in.occupancy = k.occupancy->result.occupancy;
      in.occupancy_limiter = to_string(k.occupancy->result.limiter);
    }
    in.waves_per_cu = waves_per_cu(k, sources.compute_units);
    in.mean_idle_before_ns = f.mean_idle_before_ns;
    if (k.runtime.count > 0)
      in.mean_duration_ns = k.runtime.mean_ns;
    a.bottleneck = classify(in, thresholds);
    out.kernels.push_back(std::move(a));
  }
  if (out.critical_path_ns) {
    std::stable_sort(out.kernels.begin(), out.kernels.end(),
                     [](const kernel_analysis& x, const kernel_analysis& y) {
                       return x.critical_path_ns.value_or(0) > y.critical_path_ns.value_or(0);
                     });
  }
  return out;
}

} // namespace rpl::stages::analysis
