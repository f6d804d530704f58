#include "stages/analysis/memory_access.hpp"

#include <initializer_list>
#include <string>

namespace rpl::stages::analysis {

namespace {

/// The sum of the first of `names` the kernel has (rocprofv3 records a derived counter under the
/// name it was asked for, `TCP_TOTAL_ACCESSES_sum`; a raw counter's instances are summed when
/// read, so `TCP_TOTAL_ACCESSES` reads the same).
const rocpd::counter_total* find(const rocpd::kernel_counters& k,
                                 std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const auto it = k.counters.find(name);
    if (it != k.counters.end() && it->second.dispatches > 0)
      return &it->second;
  }
  return nullptr;
}

std::optional<double> sum_of(const rocpd::kernel_counters& k,
                             std::initializer_list<const char*> names) {
  const auto* c = find(k, names);
  return c ? std::optional<double>(c->sum) : std::nullopt;
}

/// A percentage counter's mean over the dispatches that recorded it.
std::optional<double> mean_of(const rocpd::kernel_counters& k, const char* name) {
  const auto* c = find(k, {name});
  return c ? std::optional<double>(c->sum / static_cast<double>(c->dispatches)) : std::nullopt;
}

} // namespace

memory_access memory_access_of(const rocpd::kernel_counters& k) {
  memory_access out;
  // NVIDIA: Nsight Compute's memory workload analysis tables divide these two.
  const auto ld_sectors = sum_of(k, {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"});
  const auto ld_requests = sum_of(k, {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"});
  const auto st_sectors = sum_of(k, {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"});
  const auto st_requests = sum_of(k, {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"});
  if ((ld_sectors && ld_requests) || (st_sectors && st_requests)) {
    const double sectors =
        (ld_requests ? ld_sectors.value_or(0) : 0) + (st_requests ? st_sectors.value_or(0) : 0);
    const double requests = ld_requests.value_or(0) + st_requests.value_or(0);
    if (requests > 0)
      out.sectors_per_request = sectors / requests;
  }
  out.l1_pct = mean_of(k, "l1tex__throughput.avg.pct_of_peak_sustained_elapsed");
  out.l2_pct = mean_of(k, "lts__throughput.avg.pct_of_peak_sustained_elapsed");
  out.dram_pct = mean_of(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  // AMD: rocprof-compute's vL1D Coalescing (gfx90a/gfx942 analysis configs, panel 1601), from the
  // sums over the dispatches (its AVG of per-dispatch ratios weighs a small dispatch the same).
  const auto wavefronts = sum_of(k, {"TA_TOTAL_WAVEFRONTS_sum", "TA_TOTAL_WAVEFRONTS"});
  const auto accesses = sum_of(k, {"TCP_TOTAL_ACCESSES_sum", "TCP_TOTAL_ACCESSES"});
  if (wavefronts && accesses && *accesses > 0)
    out.coalescing_pct = *wavefronts * 64 * 100 / (*accesses * 4);
  return out;
}

nlohmann::json to_json(const memory_access& access) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&j](const char* key, const std::optional<double>& v) {
    if (v)
      j[key] = *v;
  };
  put("sectors_per_request", access.sectors_per_request);
  put("coalescing_pct", access.coalescing_pct);
  put("l1_pct", access.l1_pct);
  put("l2_pct", access.l2_pct);
  put("dram_pct", access.dram_pct);
  return j;
}

} // namespace rpl::stages::analysis
