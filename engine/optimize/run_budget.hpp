#pragma once
/// `--time-budget S` over a whole optimize run: the application's profile, the captures, every
/// kernel's loop and the rebuild with its second profile. The after phase (rebuild + profile) is
/// reserved as soon as the before profile has run: the before profile's time estimates the after
/// profile, and once more the rebuild (at least `min_build`). What is left goes to the kernels, a
/// kernel at a time per device: each gets its share of what is left when its turn comes (what is
/// left / the kernels still to go on that device, at least `min_kernel`), and one whose turn comes
/// with less than `min_kernel` left is not started. Without a budget nothing is reserved or
/// refused. The clock is a seam (tests use a manual one); the object is read-only once the before
/// profile is in, so device threads may ask it for their turns at once.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace rpl::engine {

class run_budget {
public:
  using clock = std::chrono::steady_clock;
  using now_fn = std::function<clock::time_point()>;

  struct limits {
    std::chrono::seconds total{0}; ///< --time-budget; 0: none
    bool after_phase = false;      ///< --app-build given: a rebuild and a second profile follow
    /// The least a kernel needs: its original built and validated, a proposal or two judged, the
    /// final comparison.
    clock::duration min_kernel = std::chrono::seconds(10);
    clock::duration min_build = std::chrono::seconds(5); ///< the rebuild's reservation at least
  };

  /// Starts counting now (the run's start).
  explicit run_budget(limits config, now_fn now = clock::now);

  bool bounded() const { return limits_.total.count() > 0; }
  /// The before profile took `took`: the after phase is reserved (with --app-build).
  void before_profiled(clock::duration took);
  clock::duration before_profile() const { return before_profile_; }
  clock::duration after_reserve() const { return after_reserve_; }
  double elapsed_s() const;
  /// Time left for the kernels (captures and loops): the budget less what has passed and the
  /// after reserve; clock::duration::max() without a budget; never negative.
  clock::duration left_for_kernels() const;
  /// A capture took `took` (the estimate of the next ones: the longest so far).
  void captured(clock::duration took);
  /// A capture's expected time: the longest so far, or before any twice the before profile (the
  /// capture library slows the application more than the tracer: 4.3-5.2 s against 1.9-3.1 s on
  /// an H200).
  clock::duration capture_estimate() const;
  /// Empty when the next kernel's capture (one run of the application, capture_estimate())
  /// may start with a kernel's minimum still left after it for it and for each of
  /// the `captured` kernels before it; else why not. (A kernel captured but never reached would
  /// have spent a capture's time for nothing.)
  std::string capture_refusal(std::size_t captured) const;

  /// A kernel's turn with `kernels_left` (it included) still to go on its device.
  struct turn {
    std::optional<clock::time_point> deadline; ///< none: no budget
    std::string refused;                       ///< non-empty: not started, and why
  };
  turn kernel_turn(std::size_t kernels_left) const;
  /// What is left of the whole budget for the after phase (its reserve included); max() without.
  clock::duration left_for_after() const;
  clock::time_point now() const { return now_(); }

private:
  limits limits_;
  now_fn now_;
  clock::time_point start_;
  clock::duration before_profile_{};
  clock::duration after_reserve_{};
  clock::duration longest_capture_{};
};

/// "12.3 s" for a duration.
std::string seconds_text(std::chrono::steady_clock::duration d);

} // namespace rpl::engine
