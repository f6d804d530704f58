#pragma once
/// The bound the kernel lanes of one run race their candidates against
/// (stages/statistics/race_rule.hpp): the smallest upper end of the median intervals measured so
/// far, with the noise of the candidate that set it. Shared by the lanes of one device model (a
/// run has one), each reading it when it sends a request and offering each valid result.

#include <mutex>

namespace rpl::workers {

class race_board {
public:
  struct bound {
    double high_ns = 0.0; ///< 0: nothing measured yet (no racing)
    double noise = 0.0;   ///< the relative noise of the candidate that set it
  };

  bound current() const {
    const std::lock_guard lock(mutex_);
    return best_;
  }

  /// Takes a valid candidate's interval upper end if it is the smallest so far.
  void offer(double high_ns, double noise) {
    if (!(high_ns > 0.0))
      return;
    const std::lock_guard lock(mutex_);
    if (best_.high_ns <= 0.0 || high_ns < best_.high_ns)
      best_ = {high_ns, noise > 0.0 ? noise : 0.0};
  }

private:
  mutable std::mutex mutex_;
  bound best_;
};

} // namespace rpl::workers
