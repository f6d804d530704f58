#pragma once
/// When to stop timing one candidate: NVBench's "stdrel" stopping criterion (relative standard
/// deviation under a target after a minimum of samples and of measured time, or noise that has
/// settled above the target), with a wall-time cap. Pure: time comes in as arguments.
///
/// Source: NVIDIA/nvbench@66212f1d, nvbench/detail/stdrel_criterion.cxx (the rules),
/// nvbench/detail/statistics.cuh (min_samples_for_noise_estimate = 5, Bessel's correction),
/// nvbench/benchmark_base.cuh (min samples 10, timeout 15 s) and nvbench/detail/measure_cold.cu
/// (the criterion is asked only once min samples are in; the timeout is checked after it).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rpl::stages {

/// How precisely one candidate is timed, and for how long at most. The defaults are NVBench's, for
/// kernel samples of microseconds to milliseconds:
///   - max_noise 0.005: NVBench's max-noise (0.5 % relative standard deviation).
///   - min_samples 10: NVBench's --min-samples (a first noise estimate needs 5).
///   - min_time_s 0.5: NVBench's min-time, summed kernel time (not wall time) before the noise may
///     end sampling. It bounds how briefly a candidate is looked at: a 1 ms kernel needs 500
///     samples, a 10 µs one 50 000, a 1 µs one 500 000 (as in NVBench, whose sample counts grow the
///     same way). A shorter window sees less of the slow variation (clock changes, other work on
///     the device), which then does not show in the noise it reports; the paired final round
///     (search/finalists.hpp) is where close candidates are told apart. Whole-process samples
///     (the timing lane, 100 ms and up) are bound by min_samples instead.
///   - max_time_s 15: NVBench's --timeout, wall seconds per candidate, start-up included. Only a
///     candidate that never settles reaches it, and the engine flags it noisy.
struct sampling_target {
  double max_noise = 0.005;     ///< relative standard deviation to reach (stdev / mean)
  std::size_t min_samples = 10; ///< no decision on fewer accepted samples
  double min_time_s = 0.5;      ///< summed sample time before the noise may end sampling
  double max_time_s = 15.0;     ///< wall-time cap per candidate; +inf for none
};

/// An error naming the field, its value and the fix, or "" when `target` is usable.
std::string check_sampling_target(const sampling_target& target);

/// Where sampling one candidate stands. Numbers are stable (stored with results).
enum class sampling_state : std::uint8_t {
  continue_sampling = 0,
  converged = 1,                    ///< noise under target after min samples and min time
  noise_converged_above_target = 2, ///< the noise settled above target (NVBench's second rule)
  time_cap = 3,                     ///< max_time_s passed before either rule ended it
  noise_undefined = 4,              ///< 64 samples in a row gave no finite noise (zero mean, NaN)
};

/// "continue_sampling", "converged", "noise_converged_above_target", "time_cap",
/// "noise_undefined".
const char* to_string(sampling_state state);

/// True for the ends the engine flags `noisy`: time_cap, noise_converged_above_target and
/// noise_undefined. False for converged and continue_sampling.
bool is_noisy(sampling_state state);

/// What feeding a batch did: the state after it and how many of its samples were fed.
struct batch_outcome {
  sampling_state state = sampling_state::continue_sampling;
  std::size_t consumed = 0;
};

/// NVBench's stdrel criterion, fed one sample at a time. Each accepted sample (finite, >= 0 ns)
/// updates the mean and the Bessel-corrected standard deviation; from the 5th on, stdev / mean
/// is the noise, kept in a history of the last 512 estimates. After each sample, in this order:
///   1. 64 samples in a row without a finite noise (rejected samples, or a zero mean): undefined;
///   2. fewer than min_samples accepted, or summed time <= min_time_s, or the latest sample gave
///      no finite noise: continue;
///   3. noise < max_noise: converged;
///   4. history > 64 entries, accepted count % 16 == 0, and the history's relative standard
///      deviation (population, around its mean) < 5 %: noise converged above target;
///   5. otherwise, elapsed wall time > max_time_s: time cap; else continue.
/// The engine stops feeding at the first state other than continue_sampling; fed on, the
/// criterion judges again from the new sample.
class sampling_criterion {
public:
  explicit sampling_criterion(sampling_target target = {});

  /// Feeds one sample, taken `elapsed_wall_s` seconds after the candidate's first request.
  /// A non-finite or negative sample is not counted (rejected_count) and blocks convergence.
  sampling_state add(double sample_ns, double elapsed_wall_s);

  /// Feeds a lane's batch in order, stopping at the first sample that ends sampling by the noise
  /// rules, so the count is what a per-sample loop would reach; the cap is judged once, after the
  /// whole batch, since `elapsed_wall_s` is when the batch arrived. Samples left unfed were taken
  /// after the criterion would have stopped.
  batch_outcome add_batch(std::span<const std::int64_t> samples_ns, double elapsed_wall_s);

  sampling_state state() const { return state_; }
  const sampling_target& target() const { return target_; }
  std::size_t sample_count() const { return count_; }      ///< accepted samples
  std::size_t rejected_count() const { return rejected_; } ///< non-finite or negative ones
  double total_time_ns() const { return total_ns_; }       ///< sum of the accepted samples
  double mean_ns() const;                                  ///< NaN before the first sample
  /// The achieved noise: stdev (n - 1) / mean of the accepted samples, NaN while undefined
  /// (fewer than 5 samples, or a mean that is not positive).
  double noise() const;
  /// Relative standard deviation of the noise history, NaN while it has fewer than 2 entries.
  double noise_history_spread() const;

private:
  sampling_state absorb(double sample_ns);
  sampling_state judge_noise() const;
  sampling_state judge_time(double elapsed_wall_s) const;
  void record_noise();

  sampling_target target_;
  sampling_state state_ = sampling_state::continue_sampling;
  std::size_t count_ = 0;
  std::size_t rejected_ = 0;
  std::size_t invalid_streak_ = 0; ///< consecutive samples without a finite noise estimate
  double total_ns_ = 0.0;
  double mean_ns_ = 0.0;
  double squares_ns2_ = 0.0;     ///< Welford's running sum of squared deviations
  std::vector<double> history_;  ///< ring of the last noise estimates
  std::size_t history_next_ = 0; ///< where the next estimate goes once the ring is full
};

} // namespace rpl::stages
