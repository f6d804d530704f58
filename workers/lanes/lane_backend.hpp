#pragma once
/// The lane seam: how one candidate is measured on one device. The engine serialises calls per
/// lane (exactly one measurement per device at a time) and never cares which backend answers.
/// Implementations: lanes/timing/ (whole-process wall time), kernel/, trace/ (cuda, rocm) and
/// recorded/ (a recorded landscape), each in its own folder. tests/support/fake_lane.hpp is the
/// test double.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "messages/wire.hpp"

namespace rpl::workers {

/// One checker tool's verdict on a candidate (lanes/kernel/sanitizer_pass.hpp).
struct sanitizer_outcome {
  std::string tool;         ///< "memcheck", "racecheck", "initcheck", "synccheck"
  bool clean = false;       ///< ran to the end and reported nothing
  std::string first_report; ///< the tool's first report line, or why it did not finish
  std::filesystem::path log;
  double seconds = 0.0;
  bool reported = false;  ///< the tool reported an error of the kernel's (not only a failed run)
  bool timed_out = false; ///< killed at its deadline
  /// The application pass: the first report that is not the kernel's (the application's host
  /// code, another kernel), which does not decide.
  std::string other_report;
};

/// What the sanitizer pass runs (lanes/kernel/sanitizer_pass.hpp): memcheck and initcheck over
/// `memory`, racecheck and synccheck, which slow every shared access and barrier by orders of
/// magnitude, over `hazards` (a small size: a hazard lives inside one block).
struct sanitizer_plan {
  std::vector<messages::measure_request> memory;
  std::vector<messages::measure_request> hazards;
};

class lane_backend {
public:
  virtual ~lane_backend() = default;
  /// Runs `request` to completion. Expected failures (crash, timeout, wrong result, a tool that is
  /// missing) come back as a measure_result status with a reason; only a broken backend throws.
  virtual messages::measure_result measure(const messages::measure_request& request) = 0;
  /// The lane's name, recorded with every measurement (e.g. "cpu0", "gpu1").
  virtual const std::string& name() const = 0;
  /// Called once from the lane's thread before it waits for its first measurement, so that a
  /// slow start (the kernel lane's process and CUDA context) overlaps the first compiles instead
  /// of delaying the first candidate. A failure here is left for measure() to report.
  virtual void prepare() {}
  /// Runs `plan` (a candidate about to be accepted) under the vendor's memory and race
  /// checkers, one outcome per tool. Where this lane has none (a CPU lane, no compute-sanitizer,
  /// an AMD GPU), returns nothing and says why in `unavailable`.
  virtual std::vector<sanitizer_outcome> sanitize(const sanitizer_plan& plan,
                                                  std::string& unavailable) {
    (void)plan;
    unavailable = "the " + name() + " lane has no memory or race checker";
    return {};
  }
};

using lane_backend_ptr = std::unique_ptr<lane_backend>;

} // namespace rpl::workers
