#include "workers/lanes/clocks/clock_watch_lane.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

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
                                   std::chrono::milliseconds reuse_window)
    : inner_(std::move(inner)), probe_(std::move(probe)), uuid_(std::move(uuid)),
      reuse_window_(reuse_window) {}

messages::measure_result clock_watch_lane::measure(const messages::measure_request& request) {
  const auto start = std::chrono::steady_clock::now();
  const bool back_to_back = last_after_ && start - last_end_ <= reuse_window_;
  const auto before = back_to_back ? last_after_ : probe_->read(uuid_);
  const auto measuring = std::chrono::steady_clock::now();
  messages::measure_result result = inner_->measure(request);
  const auto measured = std::chrono::steady_clock::now();
  const auto after = probe_->read(uuid_);
  last_after_ = after;
  last_end_ = std::chrono::steady_clock::now();
  spdlog::debug("clock watch {}: NVML reads {:.2f} ms around {:.2f} ms", inner_->name(),
                std::chrono::duration<double, std::milli>(
                    (measuring - start) + (std::chrono::steady_clock::now() - measured))
                    .count(),
                std::chrono::duration<double, std::milli>(measured - measuring).count());
  if (!before || !after) {
    return result;
  }
  messages::gpu_clocks& c = result.clocks;
  c.read = true;
  c.sm_mhz_before = before->sm_mhz;
  c.sm_mhz_after = after->sm_mhz;
  c.reasons_before = before->reasons;
  c.reasons_after = after->reasons;
  c.power_violation_ns = growth(before->power_violation_ns, after->power_violation_ns);
  c.thermal_violation_ns = growth(before->thermal_violation_ns, after->thermal_violation_ns);
  c.throttled = stages::is_throttled(c.reasons_before, c.reasons_after, c.power_violation_ns,
                                     c.thermal_violation_ns);
  return result;
}

} // namespace rpl::workers
