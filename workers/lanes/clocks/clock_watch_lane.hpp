#pragma once
/// Clock evidence around every measurement of a GPU lane: the GPU's SM clock, clocks-event
/// reasons and violation counters (workers/devices/nvml_probe.hpp) before and after the inner
/// lane measures, in measure_result::clocks, flagging a measurement that throttled
/// (stages/hardware/clock_events.hpp). Reads only: clocks and settings are left as they are.
///
/// The readings come from a clock_poller (clock_poller.hpp), which reads NVML on its own thread
/// every few milliseconds, so the lane never waits for NVML (1.5 ms a reading on an H100). What
/// that costs in precision, and why nothing is lost:
/// - "before" is the latest reading completed when the measurement starts (a fresh one is waited
///   for when that is older than `reuse_window`); back to back, it is the previous measurement's
///   "after", so the violation counters' growth is split between consecutive measurements with
///   neither gap nor overlap, and every nanosecond of violation time is charged to one of them.
/// - "after" is the latest reading completed when the measurement ends: up to one period and one
///   read (about 5.5 ms) before the end. Violation time that accrues in that tail is charged to
///   the next measurement instead; a slowing reason still set at the end shows in the next
///   reading, which is the next measurement's.
/// - A reading between the two that saw a slowing reason flags the measurement too, which catches
///   a throttle shorter than the measurement that the end readings miss.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "workers/lanes/clocks/clock_poller.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

class clock_watch_lane final : public lane_backend {
public:
  /// `uuid`: the lane's GPU ("GPU-..."), as NVML and nvidia-smi name it. The poller's thread
  /// starts here, so the first reading (NVML's first call on a device is slow) is taken while the
  /// lane starts.
  clock_watch_lane(lane_backend_ptr inner,
                   std::shared_ptr<gpu_clock_probe> probe,
                   std::string uuid,
                   std::chrono::milliseconds reuse_window = std::chrono::milliseconds(20),
                   clock_poller::timing polling = {});

  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return inner_->name(); }
  void prepare() override { inner_->prepare(); }

private:
  lane_backend_ptr inner_;
  std::chrono::milliseconds reuse_window_;
  clock_poller poller_;
  std::optional<clock_poller::reading> last_after_;
  std::chrono::steady_clock::time_point last_end_;
};

} // namespace rpl::workers
