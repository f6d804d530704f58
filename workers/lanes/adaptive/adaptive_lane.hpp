#pragma once
/// Adaptive sampling in the manner of NVBench (stages/statistics/sampling_criterion.hpp) over any
/// lane: asks the lane for batches of samples until the relative noise of the estimate is under the
/// target (after a minimum count and time) or the per-candidate time cap is hit. Every sample is
/// kept; the result says how sampling ended, the noise reached, and whether it is `noisy` (ended
/// above the target: the engine does not rank it silently).

#include <chrono>
#include <cstdint>

#include "stages/statistics/sampling_criterion.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

class adaptive_lane final : public lane_backend {
public:
  /// `batch_runs`: the runs asked of the lane per batch after the first (the first batch also
  /// carries the request's warm-up and its `runs`, the minimum).
  adaptive_lane(lane_backend_ptr inner, stages::sampling_target target, std::uint32_t batch_runs);

  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return inner_->name(); }
  void prepare() override { inner_->prepare(); }

private:
  lane_backend_ptr inner_;
  stages::sampling_target target_;
  std::uint32_t batch_runs_;
};

} // namespace rpl::workers
