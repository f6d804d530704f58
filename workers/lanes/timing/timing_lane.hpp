#pragma once
/// The `timing` measurement backend: runs a candidate's binary as fresh processes and times each run
/// with steady_clock. Failures are reported as measure_result statuses, never thrown.

#include <string>

#include "messages/wire.hpp"

namespace rpl::workers {

/// Runs `request.argv` `warmup` times, then `runs` timed times, each as a fresh process group
/// killed after `request.timeout_ms`. The first failing run (warm-up or timed) stops the
/// measurement: status says how it failed, failed_run says which run (warm-ups negative: -1 is the
/// first), and reason is one human-readable sentence. samples_ns holds only successful timed runs.
messages::measure_result run_timing_measurement(const messages::measure_request& request,
                                                const std::string& lane_name);

}  // namespace rpl::workers
