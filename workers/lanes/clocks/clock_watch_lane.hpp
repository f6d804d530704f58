#pragma once
/// Clock evidence around every measurement of a GPU lane: reads the GPU's SM clock, clocks-event
/// reasons and violation counters (workers/devices/nvml_probe.hpp) before and after the inner
/// lane measures, and fills measure_result::clocks, flagging a measurement that throttled
/// (stages/hardware/clock_events.hpp). Reads only: clocks and settings are left as they are.
///
/// Back-to-back measurements share a reading: when the previous measurement on this lane ended at
/// most `reuse_window` before this one starts, its "after" reading is this one's "before" (an
/// NVML read costs about 1.3 ms on an H100, a tenth of a raced GEMM candidate). The violation
/// counters' growth then covers that gap too, which can only flag more, never less.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "workers/devices/nvml_probe.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

class clock_watch_lane final : public lane_backend {
public:
  /// `uuid`: the lane's GPU ("GPU-..."), as NVML and nvidia-smi name it.
  clock_watch_lane(lane_backend_ptr inner,
                   std::shared_ptr<gpu_clock_probe> probe,
                   std::string uuid,
                   std::chrono::milliseconds reuse_window = std::chrono::milliseconds(20));

  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return inner_->name(); }
  void prepare() override { inner_->prepare(); }

private:
  lane_backend_ptr inner_;
  std::shared_ptr<gpu_clock_probe> probe_;
  std::string uuid_;
  std::chrono::milliseconds reuse_window_;
  std::optional<gpu_clock_reading> last_after_;
  std::chrono::steady_clock::time_point last_end_;
};

} // namespace rpl::workers
