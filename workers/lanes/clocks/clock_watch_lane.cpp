#include "workers/lanes/clocks/clock_watch_lane.hpp"

#include <chrono>

#include "stages/hardware/clock_events.hpp"

namespace rpl::workers {

namespace {

/// The growth of a cumulative counter, or -1 when either end is unknown.
std::int64_t growth(std::int64_t before, std::int64_t after) {
  return before < 0 || after < 0 || after < before ? -1 : after - before;
}

} // namespace

clock_watch_lane::clock_watch_lane(lane_backend_ptr inner,
                                   std::shared_ptr<gpu_clock_probe> probe,
                                   std::string uuid,
                                   std::chrono::milliseconds reuse_window,
                                   clock_poller::timing polling)
    : inner_(std::move(inner)), reuse_window_(reuse_window),
      poller_(std::move(probe), std::move(uuid), polling) {}

messages::measure_result clock_watch_lane::measure(const messages::measure_request& request) {
  const auto start = std::chrono::steady_clock::now();
  const bool back_to_back = last_after_ && start - last_end_ <= reuse_window_;
  auto before = poller_.start_window(reuse_window_);
  if (back_to_back && before)
    before = last_after_;
  messages::measure_result result = inner_->measure(request);
  const auto after = poller_.end_window();
  last_after_ = after;
  last_end_ = std::chrono::steady_clock::now();
  if (!before || !after || after->sequence < before->sequence)
    return result;
  messages::gpu_clocks& c = result.clocks;
  c.read = true;
  c.sm_mhz_before = before->values.sm_mhz;
  c.sm_mhz_after = after->values.sm_mhz;
  c.reasons_before = before->values.reasons;
  c.reasons_after = after->values.reasons;
  c.power_violation_ns =
      growth(before->values.power_violation_ns, after->values.power_violation_ns);
  c.thermal_violation_ns =
      growth(before->values.thermal_violation_ns, after->values.thermal_violation_ns);
  c.throttled = stages::is_throttled(c.reasons_before, c.reasons_after, c.power_violation_ns,
                                     c.thermal_violation_ns) ||
                after->slowing_seen > before->slowing_seen;
  return result;
}

} // namespace rpl::workers
