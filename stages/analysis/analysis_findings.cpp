#include "stages/analysis/analysis_findings.hpp"

#include <nlohmann/json.hpp>

#include "stages/trace/counter_values.hpp"

namespace rpl::stages::analysis {

void add_critical_path(const critical_path_result& path, analysis_sources& sources) {
  sources.critical_path_ns = path.path_ns;
  sources.critical_path_busy_ns = path.busy_ns;
  sources.makespan_ns = path.makespan_ns;
  sources.notes.insert(sources.notes.end(), path.notes.begin(), path.notes.end());
  for (const auto& k : path.kernels) {
    kernel_findings& f = sources.kernels[k.name];
    f.critical_path_ns = k.critical_path_ns;
    f.min_slack_ns = k.min_slack_ns;
    for (const auto& [pct, saving] : k.what_if)
      f.what_if.push_back({pct, saving});
  }
}

void add_stream_idle(const std::map<std::string, double>& idle_ns, analysis_sources& sources) {
  for (const auto& [name, ns] : idle_ns)
    sources.kernels[name].mean_idle_before_ns = ns;
}

void add_roofline(const roofline_report& roofline, analysis_sources& sources) {
  sources.notes.insert(sources.notes.end(), roofline.notes.begin(), roofline.notes.end());
  for (const auto& kernel : roofline.kernels) {
    kernel_findings& f = sources.kernels[kernel.name];
    if (!kernel.roofline) {
      f.roofline_missing = kernel.missing;
      continue;
    }
    const auto& r = *kernel.roofline;
    f.roofline = to_json(r);
    // Compute: Nsight Compute's SM speed of light where the pass has it (every pipe, not only
    // FLOPs), else the roofline's percent of the FLOP peak. Memory: the DRAM bandwidth's percent
    // of peak, which is what "memory-bandwidth bound" means; ncu's memory speed of light also
    // counts L1 and shared memory (a tiled GEMM reaches 85 % there on an H100 while its DRAM
    // traffic is negligible).
    f.compute_pct = r.sol_compute_pct ? r.sol_compute_pct : r.percent_of_compute_peak;
    f.memory_pct = r.percent_of_memory_peak ? r.percent_of_memory_peak : r.sol_memory_pct;
    f.active_thread_fraction = r.active_thread_fraction;
    f.issue_active = r.issue_active;
    f.top_stall = r.top_stall;
    f.top_stall_share = r.top_stall_share;
  }
}

void add_memory_access(const profile_report& report,
                       const std::map<std::string, rocpd::kernel_counters>& counters,
                       analysis_sources& sources) {
  for (const auto& kernel : report.kernels) {
    const rocpd::kernel_counters* found =
        rocpd::find_kernel_counters(counters, kernel.runtime.name);
    if (found == nullptr)
      continue;
    const memory_access access = memory_access_of(*found);
    if (!access.empty())
      sources.kernels[kernel.runtime.name].access = access;
  }
}

void add_thread_traces(const profile_report& report,
                       const std::vector<att::stall_summary>& traced,
                       std::size_t files,
                       analysis_sources& sources) {
  std::map<std::string, std::string> kernel_by_key;
  for (const auto& kernel : report.kernels)
    kernel_by_key.emplace(rocpd::kernel_key(kernel.runtime.name), kernel.runtime.name);
  std::size_t matched = 0;
  for (const auto& summary : traced) {
    auto it = kernel_by_key.find(rocpd::kernel_key(summary.kernel));
    if (it == kernel_by_key.end())
      it = kernel_by_key.find(rocpd::kernel_key(summary.symbol));
    if (it == kernel_by_key.end()) {
      sources.notes.push_back("the thread trace of " + summary.kernel +
                              " matched no kernel of the trace (by name); it is left out");
      continue;
    }
    ++matched;
    kernel_findings& f = sources.kernels[it->second];
    f.thread_trace = att::to_json(summary);
    if (f.top_stall.empty()) {
      f.top_stall = std::string(att::to_id(summary.top));
      f.top_stall_share = summary.top_share;
      f.stall_source = "thread trace";
    }
    if (summary.inconsistent_rows > 0)
      sources.notes.push_back("the thread trace of " + summary.kernel + " has " +
                              std::to_string(summary.inconsistent_rows) +
                              " instruction rows whose stall exceeds their latency: counted as "
                              "stall only");
  }
  sources.notes.push_back("thread trace: " + std::to_string(files) + " file(s), " +
                          std::to_string(traced.size()) + " traced kernel(s), " +
                          std::to_string(matched) + " matched to the trace's kernels");
}

} // namespace rpl::stages::analysis
