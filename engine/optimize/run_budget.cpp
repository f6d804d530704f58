#include "engine/optimize/run_budget.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace rpl::engine {

std::string seconds_text(std::chrono::steady_clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(d).count());
  return text;
}

run_budget::run_budget(limits config, now_fn now)
    : limits_(config), now_(std::move(now)), start_(now_()) {}

void run_budget::before_profiled(clock::duration took) {
  before_profile_ = took;
  // The after profile runs the application as the before one did; the rebuild is guessed at the
  // same time, at least min_build.
  after_reserve_ =
      limits_.after_phase ? took + std::max(took, limits_.min_build) : clock::duration{};
}

double run_budget::elapsed_s() const {
  return std::chrono::duration<double>(now_() - start_).count();
}

run_budget::clock::duration run_budget::left_for_kernels() const {
  if (!bounded()) {
    return clock::duration::max();
  }
  const auto end = start_ + limits_.total - after_reserve_;
  return std::max(end - now_(), clock::duration{});
}

run_budget::clock::duration run_budget::left_for_after() const {
  if (!bounded()) {
    return clock::duration::max();
  }
  return std::max(start_ + limits_.total - now_(), clock::duration{});
}

void run_budget::captured(clock::duration took) {
  longest_capture_ = std::max(longest_capture_, took);
}

run_budget::clock::duration run_budget::capture_estimate() const {
  return longest_capture_ > clock::duration{} ? longest_capture_ : 2 * before_profile_;
}

std::string run_budget::capture_refusal(std::size_t captured) const {
  if (!bounded()) {
    return {};
  }
  const auto left = left_for_kernels();
  const auto kernels = static_cast<clock::duration::rep>(captured + 1);
  const auto needed = capture_estimate() + limits_.min_kernel * kernels;
  if (left >= needed) {
    return {};
  }
  return "--time-budget: " + seconds_text(left) + " left for the kernels, less than a capture (" +
         seconds_text(capture_estimate()) +
         (longest_capture_ > clock::duration{} ? ", the longest so far" : ", twice the profile") +
         ") and a kernel's minimum (" + seconds_text(limits_.min_kernel) + ") for it and the " +
         std::to_string(captured) + " captured before it";
}

run_budget::turn run_budget::kernel_turn(std::size_t kernels_left) const {
  turn t;
  if (!bounded()) {
    return t;
  }
  const auto left = left_for_kernels();
  if (left < limits_.min_kernel) {
    t.refused = "--time-budget: " + seconds_text(left) +
                " left for the kernels when its turn came, less than the " +
                seconds_text(limits_.min_kernel) + " a kernel needs";
    return t;
  }
  const auto share =
      left / static_cast<clock::duration::rep>(std::max<std::size_t>(kernels_left, 1));
  t.deadline = now_() + std::max(share, std::min(limits_.min_kernel, left));
  return t;
}

} // namespace rpl::engine
