#include "workers/lanes/kernel/process/sample_loop.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

#include "stages/statistics/race_rule.hpp"
#include "stages/statistics/statistics.hpp"

namespace rpl::workers::kernel_process {

namespace {

/// Batches after min_samples are small, so the criterion is asked often.
constexpr std::uint32_t adaptive_batch = 8;

device_status warm_up(device_api& api,
                      function_handle function,
                      const launch_shape& shape,
                      void** params,
                      std::uint32_t launches,
                      const before_launch& before_each,
                      std::uint32_t& done) {
  for (; done < launches; ++done) {
    if (before_each)
      if (device_status error = before_each())
        return error;
    if (device_status error = api.launch(function, shape, params))
      return error;
  }
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
                          const before_launch& before_each,
                          bool& stop) {
  if (device_status error = events.reserve(count))
    return error;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (before_each)
      if (device_status error = before_each())
        return error;
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
                              const alongside_work& alongside,
                              const before_launch& before_each) {
  sampling_outcome out;
  const auto start = std::chrono::steady_clock::now();
  const std::chrono::milliseconds cap(sampling.time_cap_ms);
  const std::uint32_t min_samples = std::max<std::uint32_t>(1, sampling.min_samples);
  const std::uint32_t max_samples = std::max(min_samples, sampling.max_samples);
  out.samples_ns.reserve(max_samples);
  if ((out.error = warm_up(api, function, shape, params, sampling.warmup_launches, before_each,
                           out.warmups)))
    return out;
  while (out.samples_ns.size() < max_samples) {
    const auto have = static_cast<std::uint32_t>(out.samples_ns.size());
    const std::uint32_t want = have < min_samples ? min_samples - have : adaptive_batch;
    const std::uint32_t count = std::min({want, max_samples - have, max_batch});
    const bool first = have == 0;
    if ((out.error = timed_batch(api, events, function, shape, params, count, out.samples_ns,
                                 first ? alongside : alongside_work{}, before_each, out.stopped)))
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

sampling_rule::sampling_rule(messages::kernel_sampling sampling)
    : sampling_(sampling), adaptive_(sampling.max_noise > 0.0),
      // Racing mode (race_noise > 0): a candidate that cannot win stops at once (race_bound_ns),
      // and one whose median is pinned to within the noise target stops too, even where the
      // samples' spread stays above it (the sweep ranks medians; more samples would not move it).
      racing_(adaptive_ && sampling.race_noise > 0.0),
      race_min_(stages::race_min_samples(sampling.race_confidence)),
      criterion_(target_of(racing_ ? raised_for_race(sampling) : sampling)),
      quiet_(adaptive_ ? until_quiet(criterion_) : fixed_count()) {
  if (racing_) // the first batch is enough for an interval at the race's confidence
    sampling_ = raised_for_race(sampling_);
  sampling_.max_samples = std::max(sampling_.max_samples, sampling_.min_samples);
}

messages::kernel_sampling sampling_rule::raised_for_race(messages::kernel_sampling sampling) {
  sampling.min_samples = std::max<std::uint32_t>(
      sampling.min_samples,
      static_cast<std::uint32_t>(stages::race_min_samples(sampling.race_confidence)));
  return sampling;
}

stop_criterion sampling_rule::enough() {
  return [this](std::span<const std::int64_t> samples) {
    if (!racing_ || samples.size() < race_min_)
      return quiet_(samples);
    const stages::race_bound bound{sampling_.race_bound_ns, sampling_.race_noise,
                                   sampling_.race_confidence};
    const stages::race_check check = stages::judge_race(samples, bound);
    if (check.raced) {
      racing_end_ = "raced";
      return true;
    }
    if (quiet_(samples))
      return true;
    const stages::median_interval& m = check.interval;
    if (m.confidence >= bound.confidence && m.median > 0.0 &&
        (m.high - m.low) / m.median <= sampling_.max_noise &&
        static_cast<double>(criterion_.total_time_ns()) >
            static_cast<double>(sampling_.min_time_ns)) {
      racing_end_ = "median_converged";
      return true;
    }
    return false;
  };
}

void sampling_rule::finish(sampling_outcome& outcome, messages::kernel_lane_reply& reply) const {
  reply.samples_ns = std::move(outcome.samples_ns);
  reply.warmup_launches += outcome.warmups;
  reply.time_capped = outcome.time_capped;
  if (adaptive_) {
    const stages::sampling_state state = criterion_.state();
    reply.sampling_state = racing_end_ != nullptr                               ? racing_end_
                           : state != stages::sampling_state::continue_sampling ? to_string(state)
                           : outcome.time_capped                                ? "time_cap"
                                                                                : "max_samples";
    // The noise of every sample kept (a race may stop before the criterion saw the last batch).
    reply.noise =
        racing_end_ != nullptr ? stages::summarize(reply.samples_ns).cv : criterion_.noise();
    reply.noisy = racing_end_ == nullptr &&
                  (state == stages::sampling_state::continue_sampling || stages::is_noisy(state));
  }
  const stages::median_interval interval =
      stages::judge_race(reply.samples_ns, stages::race_bound{0.0, 0.0, sampling_.race_confidence})
          .interval;
  if (interval.n > 0) {
    reply.interval_low_ns = interval.low;
    reply.interval_high_ns = interval.high;
  }
  reply.status = messages::kernel_lane_status::ok;
}

void spot_checked_samples(
    const messages::kernel_sampling& sampling,
    const std::function<void(const messages::kernel_sampling& part, bool first)>& sample,
    const std::function<bool()>& spot,
    messages::kernel_lane_reply& reply) {
  const std::uint32_t runs = sampling.min_samples;
  // The spot check follows 1 to `runs` of the timed launches, the place drawn from the seed.
  const std::uint32_t before = spot_position(sampling.spot_seed, runs);
  messages::kernel_sampling part = sampling;
  part.min_samples = part.max_samples = before;
  sample(part, true);
  if (reply.status != messages::kernel_lane_status::ok || !spot())
    return;
  std::vector<std::int64_t> samples = std::move(reply.samples_ns);
  const std::uint32_t warmups = reply.warmup_launches;
  if (before < runs) {
    part.min_samples = part.max_samples = runs - before;
    part.warmup_launches = 0;
    sample(part, false);
    if (reply.status != messages::kernel_lane_status::ok)
      return;
    samples.insert(samples.end(), reply.samples_ns.begin(), reply.samples_ns.end());
  }
  reply.samples_ns = std::move(samples);
  reply.warmup_launches = warmups;
  const stages::median_interval interval =
      stages::judge_race(reply.samples_ns, stages::race_bound{0.0, 0.0, sampling.race_confidence})
          .interval;
  reply.interval_low_ns = interval.n > 0 ? interval.low : 0.0;
  reply.interval_high_ns = interval.n > 0 ? interval.high : 0.0;
  // Working less when unchecked: the checked launch took over twice the others' median.
  if (std::string less = works_less_unchecked(reply.spot_samples_ns.back(), reply.samples_ns);
      !less.empty()) {
    reply.samples_ns.clear();
    reply.status = messages::kernel_lane_status::timed_phase;
    reply.reason = std::move(less);
  }
}

std::uint32_t spot_position(std::uint64_t seed, std::uint32_t runs) {
  std::uint64_t x = seed + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::uint32_t>(1 + (x ^ (x >> 31)) % std::max<std::uint32_t>(1, runs));
}

std::string works_less_unchecked(std::int64_t spot_ns, const std::vector<std::int64_t>& samples) {
  if (samples.empty())
    return {};
  std::vector<std::int64_t> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::int64_t median = sorted[sorted.size() / 2];
  if (median <= 0 || spot_ns <= 2 * median)
    return {};
  return "timed phase: the spot-checked launch (buffers restored, outputs checked) took " +
         std::to_string(spot_ns / 1000) + " us, the other timed launches " +
         std::to_string(median / 1000) +
         " us (median): it works less when its outputs are not checked";
}

} // namespace rpl::workers::kernel_process
