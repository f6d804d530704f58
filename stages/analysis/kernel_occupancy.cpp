#include "stages/analysis/kernel_occupancy.hpp"

#include <cstdio>

namespace rpl::stages {

kernel_occupancy compute_kernel_occupancy(const arch_model& arch,
                                          const kernel_resources& resources,
                                          bool target_in_report) {
  kernel_occupancy out;
  if (target_in_report) {
    out.target = arch.target;
  }
  out.threads_per_block = resources.block_size;
  out.lds_bytes = resources.lds_bytes;
  out.result = compute_occupancy(arch, resources);
  return out;
}

nlohmann::json to_json(const kernel_occupancy& occupancy) {
  const occupancy_result& o = occupancy.result;
  nlohmann::json limits = nlohmann::json::object();
  for (const auto& [name, value] : o.limit_by_resource) {
    limits[name] = value;
  }
  nlohmann::json out = {{"threads_per_block", occupancy.threads_per_block},
                        {"lds_bytes", occupancy.lds_bytes},
                        {"wave_size", o.wave_size},
                        {"unit", o.unit},
                        {"active", o.active_waves_per_simd},
                        {"max", o.max_waves_per_simd},
                        {"workgroups_per_cu", o.active_workgroups_per_cu},
                        {"theoretical", o.occupancy},
                        {"limiter", to_string(o.limiter)},
                        {"limits", limits},
                        {"suggestions", o.suggestions}};
  if (occupancy.target) {
    out["target"] = *occupancy.target;
  }
  return out;
}

std::string occupancy_summary(const occupancy_result& result) {
  char percent[32];
  std::snprintf(percent, sizeof percent, "%.0f", result.occupancy * 100.0);
  return std::to_string(result.active_waves_per_simd) + "/" +
         std::to_string(result.max_waves_per_simd) + " " + result.unit + " (" + percent + "%, " +
         to_string(result.limiter) + ")";
}

} // namespace rpl::stages
