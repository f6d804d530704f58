#pragma once
/// The `timing` lane: runs a candidate's binary as fresh processes and times each run with
/// steady_clock (whole-process wall time, so it works for any program on any host). Failures are
/// reported as measure_result statuses, never thrown.

#include <string>

#include "messages/wire.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

/// Runs `request.argv` `warmup` times, then `runs` timed times, each as a fresh process group
/// killed after `request.timeout_ms`. The first failing run (warm-up or timed) stops the
/// measurement: status says how it failed, failed_run says which run (warm-ups negative: -1 is the
/// first), and reason is one human-readable sentence. samples_ns holds only successful timed runs.
/// Whatever a run leaves running when it exits (a setsid daemon, a background job) is killed
/// (child_options::reap_descendants), counted in leftover_processes and logged as a warning.
/// Holds no state between measurements, so one object may serve one lane for a whole run.
class timing_lane final : public lane_backend {
public:
  explicit timing_lane(std::string name);
  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return name_; }

private:
  std::string name_;
};

} // namespace rpl::workers
