#pragma once
/// Warm-up launches, then timed launches: an event pair around each launch gives its GPU time.
/// Launches go out in batches, one synchronisation per batch, so the GPU stays busy between
/// samples; the warm-ups are queued with the first batch, and the host's own work for the
/// candidate (the output check) runs while the GPU works through them. After each batch past
/// min_samples the stop criterion decides whether there are enough; max_samples and time_cap_ms
/// bound it.
///
/// Two criteria: fixed_count() stops at min_samples; until_quiet() is adaptive sampling
/// (stages/statistics/sampling_criterion.hpp, NVBench's stdrel rule) inside the lane, so one
/// request per candidate samples until the noise is under the target, with no round trips.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "stages/statistics/sampling_criterion.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"
#include "workers/lanes/kernel/process/event_pool.hpp"

namespace rpl::workers::kernel_process {

/// True when the samples so far are enough (it is asked only once min_samples exist).
using stop_criterion = std::function<bool(std::span<const std::int64_t> samples_ns)>;

/// Enough as soon as min_samples exist: a fixed count.
stop_criterion fixed_count();

/// Feeds each sample not yet fed to `criterion` (which must outlive the returned function) and is
/// enough once its state leaves continue_sampling. Its time cap is left to take_samples.
stop_criterion until_quiet(stages::sampling_criterion& criterion);

/// The criterion for `sampling`'s max_noise, min_samples and min_time_ns, with no wall cap of its
/// own (take_samples has time_cap_ms).
stages::sampling_target target_of(const messages::kernel_sampling& sampling);

/// Host work done once while the GPU runs the warm-ups and the first timed batch (queued, not yet
/// waited for): the lane's output check. False stops sampling after that batch.
using alongside_work = std::function<bool()>;

struct sampling_outcome {
  std::vector<std::int64_t> samples_ns;
  std::uint32_t warmups = 0;
  bool time_capped = false; ///< stopped by the time cap before the criterion was met
  bool stopped = false;     ///< the alongside work said stop
  device_status error;      ///< the launch or synchronisation that failed
};

/// Largest number of launches between two synchronisations (event pairs in the pool).
inline constexpr std::uint32_t max_batch = 64;

/// Queued before every launch (warm-ups and timed ones), outside the timed span: the replay
/// lane's restore of the regions a kernel writes. An error stops sampling.
using before_launch = std::function<device_status()>;

sampling_outcome take_samples(device_api& api,
                              event_pool& events,
                              function_handle function,
                              const launch_shape& shape,
                              void** params,
                              const messages::kernel_sampling& sampling,
                              const stop_criterion& enough,
                              const alongside_work& alongside = {},
                              const before_launch& before_each = {});

/// A request's stop rule (fixed count, adaptive sampling, racing) and what it tells the reply
/// afterwards; shared by the kernel lane and the replay lane. Construct it with the request's
/// sampling, whose min_samples it raises for racing; pass sampling() to take_samples.
class sampling_rule {
public:
  explicit sampling_rule(messages::kernel_sampling sampling);
  sampling_rule(const sampling_rule&) = delete;
  sampling_rule& operator=(const sampling_rule&) = delete;

  const messages::kernel_sampling& sampling() const { return sampling_; }
  /// The criterion for take_samples (refers to this object).
  stop_criterion enough();
  /// The reply's samples, warm-up count and time cap from `outcome` (moved), and its sampling
  /// state, noise and median interval; status ok.
  void finish(sampling_outcome& outcome, messages::kernel_lane_reply& reply) const;

private:
  static messages::kernel_sampling raised_for_race(messages::kernel_sampling sampling);

  messages::kernel_sampling sampling_;
  bool adaptive_ = false;
  bool racing_ = false;
  std::size_t race_min_ = 0;
  stages::sampling_criterion criterion_;
  stop_criterion quiet_;
  const char* racing_end_ = nullptr;
};

/// A fixed-count request's timed launches split around one spot check (the kernel lane's and
/// the replay lane's): `sample(part, first)` takes the samples of `part` into the reply (`first`:
/// the part right after the checked launch); `spot()` runs the spot-checked launch (false: the
/// reply says why). The parts are joined in the reply with their median interval, and a spot
/// launch over twice the others' median is `timed_phase`. Stops at the first failure.
void spot_checked_samples(
    const messages::kernel_sampling& sampling,
    const std::function<void(const messages::kernel_sampling& part, bool first)>& sample,
    const std::function<bool()>& spot,
    messages::kernel_lane_reply& reply);

/// After how many of `runs` timed launches the spot check goes (1..runs), drawn from `seed`.
std::uint32_t spot_position(std::uint64_t seed, std::uint32_t runs);

/// The timed-phase finding when the spot-checked launch took over twice the others' median (a
/// kernel that works less when its outputs are not checked); empty otherwise.
std::string works_less_unchecked(std::int64_t spot_ns, const std::vector<std::int64_t>& samples);

} // namespace rpl::workers::kernel_process
