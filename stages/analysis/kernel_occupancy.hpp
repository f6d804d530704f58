#pragma once
/// One kernel's theoretical occupancy at one block size, as `profile`, `analyze` and `inspect`
/// report it: the JSON object of docs/schema/profile.schema.json ("occupancy") and the one-line
/// summary of their tables. Built once here so the verbs cannot drift apart.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "stages/hardware/occupancy_model.hpp"

namespace rpl::stages {

/// A computed occupancy with the launch it describes.
struct kernel_occupancy {
  /// The architecture model used. profile names it per kernel; inspect names it once per code
  /// object and leaves it out here.
  std::optional<std::string> target;
  std::uint32_t threads_per_block = 0;
  occupancy_result result;
  /// LDS (NVIDIA: shared memory) per workgroup the model was given: a launch's static + dynamic
  /// bytes where a trace recorded them, a code object's static bytes for inspect.
  std::uint64_t lds_bytes = 0;
};

/// Computes `resources` on `arch`; `target_in_report` says whether the report names the target.
/// Throws arch_error for a wave size `arch` does not have.
kernel_occupancy compute_kernel_occupancy(const arch_model& arch,
                                          const kernel_resources& resources,
                                          bool target_in_report);

/// {"target"?, "threads_per_block", "lds_bytes", "wave_size", "unit", "active", "max",
/// "workgroups_per_cu", "theoretical", "limiter", "limits", "suggestions"}.
nlohmann::json to_json(const kernel_occupancy& occupancy);

/// "2/8 waves per SIMD (25%, lds)": active/max, unit, occupancy in whole percent, limiter.
std::string occupancy_summary(const occupancy_result& result);

} // namespace rpl::stages
