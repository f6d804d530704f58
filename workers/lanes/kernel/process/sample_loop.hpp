#pragma once
/// Warm-up launches, then timed launches: an event pair around each launch gives its GPU time.
/// Launches go out in batches, one synchronisation per batch, so the GPU stays busy between
/// samples. After each batch past min_samples the stop criterion decides whether there are
/// enough; max_samples and time_cap_ms bound it.
///
/// The criterion is the seam for adaptive sampling (stages/statistics/sampling_criterion.hpp, in
/// progress elsewhere: stop when the relative noise of the estimate is under a target). Until it
/// is wired in, fixed_count() stops at min_samples.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"
#include "workers/lanes/kernel/process/event_pool.hpp"

namespace rpl::workers::kernel_process {

/// True when the samples so far are enough (it is asked only once min_samples exist).
using stop_criterion = std::function<bool(std::span<const std::int64_t> samples_ns)>;

/// Enough as soon as min_samples exist: a fixed count.
stop_criterion fixed_count();

struct sampling_outcome {
  std::vector<std::int64_t> samples_ns;
  std::uint32_t warmups = 0;
  bool time_capped = false; ///< stopped by the time cap before the criterion was met
  device_status error;      ///< the launch or synchronisation that failed
};

/// Largest number of launches between two synchronisations (event pairs in the pool).
inline constexpr std::uint32_t max_batch = 64;

sampling_outcome take_samples(device_api& api,
                              event_pool& events,
                              function_handle function,
                              const launch_shape& shape,
                              void** params,
                              const messages::kernel_sampling& sampling,
                              const stop_criterion& enough);

} // namespace rpl::workers::kernel_process
