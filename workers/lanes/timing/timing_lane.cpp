#include "workers/lanes/timing/timing_lane.hpp"

#include <chrono>
#include <utility>

#include <spdlog/spdlog.h>

#include "workers/process/child_process.hpp"
#include "workers/process/descendant_reaper.hpp"

namespace rpl::workers {

namespace {

/// Output is kept only to quote it in a failure reason, so a little is enough.
constexpr std::size_t kept_output_bytes = 4096;

/// Fills status and reason for a run that did not succeed; `run_name` is "run 2" or "warm-up 1".
void record_failure(messages::measure_result& result,
                    const child_outcome& outcome,
                    const std::string& run_name,
                    std::chrono::milliseconds timeout) {
  result.exit_code = outcome.exit_code;
  result.term_signal = outcome.term_signal;
  result.reason = run_name + " " + describe_exit(outcome, timeout);
  if (!outcome.launched) {
    result.status = messages::measure_status::launch_failed;
  } else if (outcome.timed_out) {
    result.status = messages::measure_status::timed_out;
    result.reason += "; its process group was killed";
  } else if (outcome.term_signal != 0) {
    result.status = messages::measure_status::crashed;
  } else {
    result.status = messages::measure_status::nonzero_exit;
    const std::string line = first_output_line(outcome.output);
    if (!line.empty())
      result.reason += ": " + line;
  }
}

/// Flags the result and says so in the log, once per measurement.
void report_leftovers(messages::measure_result& result,
                      const messages::measure_request& request,
                      const std::vector<pid_t>& leftovers) {
  if (leftovers.empty())
    return;
  result.leftover_processes = static_cast<std::uint32_t>(leftovers.size());
  spdlog::warn("candidate {}: its runs on lane {} {}, killed them; the samples stand, the "
               "candidate is flagged (leftover_processes)",
               request.candidate_key, result.lane, describe_leftovers(leftovers));
}

} // namespace

timing_lane::timing_lane(std::string name) : name_(std::move(name)) {}

messages::measure_result timing_lane::measure(const messages::measure_request& request) {
  messages::measure_result result;
  result.lane = name_;
  result.samples_ns.reserve(request.runs);

  child_options options;
  options.argv = request.argv;
  options.capture_output = true; // only to quote it when a run fails; stdout is otherwise ignored
  options.max_output_bytes = kept_output_bytes;
  // A killed engine must not leave a hanging candidate behind (the lane thread outlives its runs).
  options.kill_on_parent_death = true;
  const std::chrono::milliseconds timeout(request.timeout_ms);

  std::vector<pid_t> leftovers; // over every run, warm-ups included
  const auto total = static_cast<std::int64_t>(request.warmup) + request.runs;
  for (std::int64_t index = 0; index < total; ++index) {
    const bool warmup = index < request.warmup;
    // Warm-ups are numbered -1, -2, ... and named "warm-up 1, 2, ..."; timed runs from 0.
    const auto run_index =
        static_cast<std::int32_t>(warmup ? -(index + 1) : index - request.warmup);
    const child_outcome outcome = run_child(options, timeout);
    leftovers.insert(leftovers.end(), outcome.leftovers.begin(), outcome.leftovers.end());
    if (outcome.succeeded()) {
      if (!warmup)
        result.samples_ns.push_back(outcome.wall.count());
      continue;
    }
    result.failed_run = run_index;
    record_failure(result, outcome,
                   warmup ? "warm-up " + std::to_string(-run_index)
                          : "run " + std::to_string(run_index),
                   timeout);
    report_leftovers(result, request, leftovers);
    return result;
  }

  result.status = messages::measure_status::ok;
  result.failed_run = -1;
  report_leftovers(result, request, leftovers);
  return result;
}

} // namespace rpl::workers
