#include "workers/lanes/kernel/process/sample_loop.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

namespace rpl::workers::kernel_process {

namespace {

/// Batches after min_samples are small, so the criterion is asked often.
constexpr std::uint32_t adaptive_batch = 8;

device_status warm_up(device_api& api,
                      function_handle function,
                      const launch_shape& shape,
                      void** params,
                      std::uint32_t launches,
                      std::uint32_t& done) {
  for (; done < launches; ++done)
    if (device_status error = api.launch(function, shape, params))
      return error;
  return std::nullopt; // waited for with the first batch
}

device_status timed_batch(device_api& api,
                          event_pool& events,
                          function_handle function,
                          const launch_shape& shape,
                          void** params,
                          std::uint32_t count,
                          std::vector<std::int64_t>& samples,
                          const alongside_work& alongside,
                          bool& stop) {
  if (device_status error = events.reserve(count))
    return error;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (device_status error = api.record_event(events.start(i)))
      return error;
    if (device_status error = api.launch(function, shape, params))
      return error;
    if (device_status error = api.record_event(events.stop(i)))
      return error;
  }
  if (alongside && !alongside())
    stop = true;
  if (device_status error = api.synchronize())
    return error;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::int64_t ns = 0;
    if (device_status error = api.elapsed_ns(events.start(i), events.stop(i), ns))
      return error;
    samples.push_back(ns);
  }
  return std::nullopt;
}

} // namespace

stop_criterion fixed_count() {
  return [](std::span<const std::int64_t>) { return true; };
}

stop_criterion until_quiet(stages::sampling_criterion& criterion) {
  return [&criterion, fed = std::size_t{0}](std::span<const std::int64_t> samples) mutable {
    const auto outcome = criterion.add_batch(samples.subspan(fed), 0.0);
    fed = samples.size();
    return outcome.state != stages::sampling_state::continue_sampling;
  };
}

stages::sampling_target target_of(const messages::kernel_sampling& sampling) {
  stages::sampling_target target;
  target.max_noise = sampling.max_noise;
  target.min_samples = std::max<std::size_t>(1, sampling.min_samples);
  target.min_time_s = static_cast<double>(sampling.min_time_ns) * 1e-9;
  target.max_time_s = std::numeric_limits<double>::infinity();
  return target;
}

sampling_outcome take_samples(device_api& api,
                              event_pool& events,
                              function_handle function,
                              const launch_shape& shape,
                              void** params,
                              const messages::kernel_sampling& sampling,
                              const stop_criterion& enough,
                              const alongside_work& alongside) {
  sampling_outcome out;
  const auto start = std::chrono::steady_clock::now();
  const std::chrono::milliseconds cap(sampling.time_cap_ms);
  const std::uint32_t min_samples = std::max<std::uint32_t>(1, sampling.min_samples);
  const std::uint32_t max_samples = std::max(min_samples, sampling.max_samples);
  out.samples_ns.reserve(max_samples);
  if ((out.error = warm_up(api, function, shape, params, sampling.warmup_launches, out.warmups)))
    return out;
  while (out.samples_ns.size() < max_samples) {
    const auto have = static_cast<std::uint32_t>(out.samples_ns.size());
    const std::uint32_t want = have < min_samples ? min_samples - have : adaptive_batch;
    const std::uint32_t count = std::min({want, max_samples - have, max_batch});
    const bool first = have == 0;
    if ((out.error = timed_batch(api, events, function, shape, params, count, out.samples_ns,
                                 first ? alongside : alongside_work{}, out.stopped)))
      return out;
    if (out.stopped)
      break;
    const bool satisfied = out.samples_ns.size() >= min_samples && enough(out.samples_ns);
    if (satisfied)
      break;
    if (std::chrono::steady_clock::now() - start >= cap) {
      out.time_capped = true;
      break;
    }
  }
  return out;
}

} // namespace rpl::workers::kernel_process
