#pragma once
/// One side's dispatch durations per kernel launch shape: what compare's statistics read. A side
/// is one or more runs of the application; the samples pool every run, and each run's median is
/// kept for the noise between runs.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace rpl::stages::compare {

using launch_dim = std::array<std::uint32_t, 3>;

/// The dispatches of one kernel name with one grid and block size.
struct launch_samples {
  std::string name; ///< display name, as the report names the kernel
  launch_dim grid{};
  launch_dim block{};
  std::vector<double> durations_ns;   ///< every run's dispatches, pooled
  std::vector<double> run_medians_ns; ///< one per run that launched it (empty for one run)
};

/// "4096", "64x4", "8x8x2": trailing 1s dropped.
std::string format_dim(const launch_dim& d);

/// "grid 4096x1x1 block 256x1x1" (trailing 1s dropped: "grid 4096 block 256").
std::string describe_shape(const launch_dim& grid, const launch_dim& block);

} // namespace rpl::stages::compare
