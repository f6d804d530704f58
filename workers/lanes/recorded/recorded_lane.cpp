#include "workers/lanes/recorded/recorded_lane.hpp"

#include <cmath>

namespace rpl::workers {

recorded_lane::recorded_lane(std::shared_ptr<const stages::landscape> landscape,
                             std::string name,
                             double ns_per_unit)
    : landscape_(std::move(landscape)), name_(std::move(name)), ns_per_unit_(ns_per_unit) {}

messages::measure_result recorded_lane::measure(const messages::measure_request& request) {
  messages::measure_result r;
  r.lane = name_;
  std::string key;
  for (std::size_t i = 1; i < request.argv.size(); ++i)
    key += (i > 1 ? "," : "") + request.argv[i];
  const auto entry = landscape_->find(key);
  if (!entry) {
    r.status = messages::measure_status::launch_failed;
    r.reason = "recorded: configuration " + key + " is not in " + landscape_->origin;
    return r;
  }
  const stages::landscape_entry& e = landscape_->entries[*entry];
  if (!e.value) {
    r.status = messages::measure_status::nonzero_exit;
    r.exit_code = 1;
    r.reason = "recorded: " + e.failure;
    return r;
  }
  r.status = messages::measure_status::ok;
  auto ns = [this](double v) { return static_cast<std::int64_t>(std::llround(v * ns_per_unit_)); };
  if (!e.samples.empty()) {
    for (const double s : e.samples)
      r.samples_ns.push_back(ns(s));
  } else {
    r.samples_ns.assign(std::max<std::uint32_t>(request.runs, 1), ns(*e.value));
  }
  r.sampling = "recorded";
  return r;
}

} // namespace rpl::workers
