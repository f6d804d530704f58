#pragma once
/// The lanes of an autotune run, by kind: CPU slots for the timing backend (pinned when cores
/// allow), or one lane per GPU (--devices) for the kernel lane and the application lanes, each
/// behind adaptive sampling when it is on (the kernel lane samples inside its process), and each
/// NVIDIA GPU lane behind a clock watch (NVML) where the driver has one.

#include <memory>
#include <string>
#include <vector>

#include "engine/autotune/autotune.hpp"
#include "engine/autotune/autotune_inputs.hpp"
#include "engine/graph/lane_worker.hpp"

namespace rpl::engine {

struct lane_plan {
  std::vector<std::unique_ptr<lane_worker>> lanes;
  std::vector<std::string> devices; ///< "model (uuid)" per GPU lane
};

/// `lane_cpus[i]` pins CPU lane i (-1: not pinned); GPU lanes are not pinned.
lane_plan make_lanes(const autotune_options& options,
                     const autotune_inputs& inputs,
                     const std::vector<int>& lane_cpus);

/// How many lanes the run will have (known before the lanes start, for the CPU plan).
std::size_t lane_count(const autotune_options& options, const autotune_inputs& inputs);

} // namespace rpl::engine
