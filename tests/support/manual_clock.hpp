#pragma once
/// A clock that moves only when a test says so, for heartbeat, liveness and deadline decisions
/// (engine::broker_config::clock). Thread-safe: the broker thread reads it while the test advances.

#include <atomic>
#include <chrono>
#include <functional>

namespace rpl::testing {

class manual_clock {
public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  /// Starts at an arbitrary fixed point, well away from the epoch (nothing may assume zero).
  manual_clock() = default;

  time_point now() const { return time_point(duration(ticks_.load())); }
  void advance(duration by) { ticks_.fetch_add(by.count()); }

  /// A function reading this clock, for configs that take one. The clock must outlive its users.
  std::function<time_point()> function() const {
    return [this] { return now(); };
  }

private:
  std::atomic<duration::rep> ticks_{
      std::chrono::duration_cast<duration>(std::chrono::hours(1000)).count()};
};

} // namespace rpl::testing
