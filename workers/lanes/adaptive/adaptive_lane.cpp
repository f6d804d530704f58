#include "workers/lanes/adaptive/adaptive_lane.hpp"

#include <algorithm>

namespace rpl::workers {

adaptive_lane::adaptive_lane(lane_backend_ptr inner,
                             stages::sampling_target target,
                             std::uint32_t batch_runs)
    : inner_(std::move(inner)), target_(target),
      batch_runs_(std::max<std::uint32_t>(1, batch_runs)) {}

messages::measure_result adaptive_lane::measure(const messages::measure_request& request) {
  if (request.fixed_count) {
    return inner_->measure(request);
  }
  const auto started = std::chrono::steady_clock::now();
  stages::sampling_criterion criterion(target_);
  messages::measure_result total;
  auto batch = request;
  for (bool first = true;; first = false) {
    if (!first) {
      batch.warmup = 0;
      batch.runs = batch_runs_;
    }
    auto result = inner_->measure(batch);
    total.leftover_processes += result.leftover_processes;
    if (result.status != messages::measure_status::ok) {
      result.leftover_processes = total.leftover_processes;
      // A failure in any batch fails the candidate, as one long measurement would.
      result.samples_ns.insert(result.samples_ns.begin(), total.samples_ns.begin(),
                               total.samples_ns.end());
      return result;
    }
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const auto outcome = criterion.add_batch(result.samples_ns, elapsed_s);
    // Samples past the one that ended sampling were measured too: keep them all.
    total.samples_ns.insert(total.samples_ns.end(), result.samples_ns.begin(),
                            result.samples_ns.end());
    if (first || total.device_uuid.empty()) {
      total.lane = result.lane;
      total.device_model = result.device_model;
      total.device_uuid = result.device_uuid;
    }
    if (outcome.state != stages::sampling_state::continue_sampling || result.samples_ns.empty()) {
      total.status = messages::measure_status::ok;
      total.sampling = result.samples_ns.empty() ? "no_samples" : stages::to_string(outcome.state);
      total.noise = criterion.noise();
      total.noisy = result.samples_ns.empty() || stages::is_noisy(outcome.state);
      return total;
    }
  }
}

} // namespace rpl::workers
