#include "stages/statistics/sampling_criterion.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

namespace rpl::stages {

namespace {

// NVBench's constants (nvbench/detail/stdrel_criterion.cxx, statistics.cuh, @66212f1d).
constexpr std::size_t min_samples_for_noise = 5;
constexpr std::size_t noise_history_capacity = 512;
constexpr std::size_t min_noise_stability_window = 64;
constexpr std::size_t noise_stability_check_interval = 16;
constexpr double noise_stability_threshold = 0.05;
constexpr std::size_t invalid_noise_estimate_limit = 64;

constexpr double ns_per_s = 1e9;
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

std::string field_error(const char* field, double value, const char* expected) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, "sampling target: %s is %g; expected %s", field, value,
                expected);
  return buffer;
}

} // namespace

std::string check_sampling_target(const sampling_target& target) {
  if (!(target.max_noise > 0.0) || std::isinf(target.max_noise)) {
    return field_error("max_noise", target.max_noise,
                       "a relative standard deviation above 0, e.g. 0.005 for 0.5 %");
  }
  if (!(target.min_time_s >= 0.0) || std::isinf(target.min_time_s)) {
    return field_error("min_time_s", target.min_time_s,
                       "a finite number of seconds >= 0, e.g. 0.5");
  }
  if (!(target.max_time_s > 0.0)) {
    return field_error("max_time_s", target.max_time_s,
                       "seconds above 0, e.g. 15, or infinity for no cap");
  }
  return "";
}

const char* to_string(sampling_state state) {
  switch (state) {
  case sampling_state::continue_sampling: return "continue_sampling";
  case sampling_state::converged: return "converged";
  case sampling_state::noise_converged_above_target: return "noise_converged_above_target";
  case sampling_state::time_cap: return "time_cap";
  case sampling_state::noise_undefined: return "noise_undefined";
  }
  return "unknown";
}

bool is_noisy(sampling_state state) {
  return state == sampling_state::time_cap ||
         state == sampling_state::noise_converged_above_target ||
         state == sampling_state::noise_undefined;
}

sampling_criterion::sampling_criterion(sampling_target target) : target_(target) {
  history_.reserve(noise_history_capacity);
}

double sampling_criterion::mean_ns() const {
  return count_ == 0 ? nan : mean_ns_;
}

double sampling_criterion::noise() const {
  if (count_ < min_samples_for_noise || !(mean_ns_ > 0.0)) {
    return nan; // NVBench: no estimate from fewer than 5 samples or around a mean <= 0
  }
  const double stdev_ns = std::sqrt(squares_ns2_ / static_cast<double>(count_ - 1));
  return stdev_ns / mean_ns_;
}

double sampling_criterion::noise_history_spread() const {
  if (history_.size() < 2) {
    return nan;
  }
  double sum = 0.0;
  for (const double entry : history_) {
    sum += entry;
  }
  const double mean = sum / static_cast<double>(history_.size());
  double squares = 0.0;
  for (const double entry : history_) {
    squares += (entry - mean) * (entry - mean);
  }
  // Divides by the count, not count - 1: NVBench compares the biased variance of the history.
  return std::sqrt(squares / static_cast<double>(history_.size())) / mean;
}

void sampling_criterion::record_noise() {
  const double current = noise();
  if (!std::isfinite(current)) {
    ++invalid_streak_;
    return;
  }
  invalid_streak_ = 0;
  if (history_.size() < noise_history_capacity) {
    history_.push_back(current);
    return;
  }
  history_[history_next_] = current;
  history_next_ = (history_next_ + 1) % noise_history_capacity;
}

sampling_state sampling_criterion::absorb(double sample_ns) {
  if (!std::isfinite(sample_ns) || sample_ns < 0.0) {
    ++rejected_;
    ++invalid_streak_; // a stream of them must end, as NVBench's stream of NaN noise does
    return judge_noise();
  }
  ++count_;
  total_ns_ += sample_ns;
  // Welford's update keeps the variance exact enough for close, large timings.
  const double delta = sample_ns - mean_ns_;
  mean_ns_ += delta / static_cast<double>(count_);
  squares_ns2_ += delta * (sample_ns - mean_ns_);
  if (count_ >= min_samples_for_noise) {
    record_noise();
  }
  return judge_noise();
}

sampling_state sampling_criterion::judge_noise() const {
  if (invalid_streak_ >= invalid_noise_estimate_limit) {
    return sampling_state::noise_undefined;
  }
  if (count_ < target_.min_samples || total_ns_ <= target_.min_time_s * ns_per_s ||
      history_.empty() || invalid_streak_ != 0) {
    return sampling_state::continue_sampling;
  }
  if (noise() < target_.max_noise) {
    return sampling_state::converged;
  }
  if (history_.size() > min_noise_stability_window &&
      count_ % noise_stability_check_interval == 0 &&
      noise_history_spread() < noise_stability_threshold) {
    return sampling_state::noise_converged_above_target;
  }
  return sampling_state::continue_sampling;
}

sampling_state sampling_criterion::judge_time(double elapsed_wall_s) const {
  // Checked after the noise rules, as NVBench's measure loop does: a candidate that converges on
  // the sample that crosses the cap has converged.
  return elapsed_wall_s > target_.max_time_s ? sampling_state::time_cap
                                             : sampling_state::continue_sampling;
}

sampling_state sampling_criterion::add(double sample_ns, double elapsed_wall_s) {
  state_ = absorb(sample_ns);
  if (state_ == sampling_state::continue_sampling) {
    state_ = judge_time(elapsed_wall_s);
  }
  return state_;
}

batch_outcome sampling_criterion::add_batch(std::span<const std::int64_t> samples_ns,
                                            double elapsed_wall_s) {
  batch_outcome outcome;
  for (const std::int64_t sample_ns : samples_ns) {
    ++outcome.consumed;
    state_ = absorb(static_cast<double>(sample_ns));
    if (state_ != sampling_state::continue_sampling) {
      outcome.state = state_;
      return outcome;
    }
  }
  if (state_ == sampling_state::continue_sampling) { // an empty batch keeps an earlier end
    state_ = judge_time(elapsed_wall_s);
  }
  outcome.state = state_;
  return outcome;
}

} // namespace rpl::stages
