#pragma once
/// The kernel lane: measures a candidate by launching its kernel from its code object inside one
/// long-lived lane process per GPU (`rpl-kernel-lane`, workers/lanes/kernel/process/), so no
/// process starts per candidate and the samples are the kernel's GPU time, not a program's wall
/// time. The process is a separate one so that a kernel that faults or hangs costs a restart of
/// the lane, never the engine: the candidate is then `crashed` or `timed_out` with the reason and
/// the next one gets a fresh process. README.md in this folder has the process model.
///
/// A request needs `launch` (the launch file resolved for the candidate, see
/// stages/search/launch_spec.hpp) and the code object in argv[0]. `runs` timed launches follow
/// `warmup` untimed ones after the checked launch. Without a reference kernel in the launch, the
/// first candidate that runs correctly becomes the reference for the rest (its code object must
/// stay where it is). The reply must come within the request's timeout_ms plus reply_allowance:
/// here timeout_ms bounds one candidate's whole stay in the lane (load, check, every launch), not
/// one run as in the timing lane.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "messages/wire.hpp"
#include "stages/statistics/sampling_criterion.hpp"
#include "workers/lanes/kernel/lane_process.hpp"
#include "workers/lanes/kernel/race_board.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

struct kernel_lane_options {
  std::string name = "gpu0";             ///< recorded with every measurement
  std::filesystem::path program;         ///< the lane executable (default_kernel_lane_program())
  std::vector<std::string> program_args; ///< extra arguments for it
  int device = 0; ///< exported as `visible_devices_variable`; the process then uses its device 0
  /// CUDA_VISIBLE_DEVICES for rpl-kernel-lane, HIP_VISIBLE_DEVICES for the HIP variant; empty:
  /// leave visibility alone and pass `--device N` instead.
  std::string visible_devices_variable = "CUDA_VISIBLE_DEVICES";
  std::vector<std::pair<std::string, std::optional<std::string>>> environment; ///< more changes
  /// How long a fresh process may take to open the device and say hello (CUDA start-up).
  std::chrono::milliseconds start_timeout{60000};
  /// Added to the request's timeout_ms for one reply: loading, uploads, the reference.
  std::chrono::milliseconds reply_allowance{5000};
  /// Adaptive sampling inside the lane process, one request per candidate: after `runs` samples,
  /// launches continue until the noise is under sampling->max_noise (with min_time_s of summed
  /// kernel time), up to max_samples or time_cap (then the result is `noisy`). nullopt, or a
  /// request with fixed_count: exactly `runs` samples.
  std::optional<stages::sampling_target> sampling;
  std::uint32_t max_samples = 1u << 20;
  /// Sampling stops after this long even before its criterion is met (the reply says so).
  std::chrono::milliseconds time_cap{10000};
  /// Racing (with adaptive sampling): a candidate whose median interval lies wholly above the
  /// board's bound by more than the separating noise stops sampling ("raced"); every valid
  /// result is offered to the board. nullptr: no racing.
  std::shared_ptr<race_board> race;
  double race_confidence = 0.95;
  /// Where sanitize() writes the tools' logs (created when needed); empty: the system's temporary
  /// folder.
  std::filesystem::path sanitizer_log_dir;
  /// How long one compute-sanitizer tool may take over a candidate's requests.
  std::chrono::milliseconds sanitizer_timeout{std::chrono::minutes(5)};
};

class kernel_lane final : public lane_backend {
public:
  /// Starts nothing yet: the first measure() starts the process, from the calling thread (the
  /// lane thread, which outlives it: the process is tied to that thread's life).
  explicit kernel_lane(kernel_lane_options options);
  /// Closes the process's input and gives it a moment to exit, then kills it.
  ~kernel_lane() override;

  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return options_.name; }
  /// Starts the lane process (CUDA's start-up) ahead of the first candidate.
  void prepare() override;
  /// The plan's requests under compute-sanitizer's four tools (sanitizer_pass.hpp), each in
  /// a lane process of its own on this lane's device, without reference kernels or red zones.
  /// Unavailable for the HIP lane and where no compute-sanitizer is found.
  std::vector<sanitizer_outcome> sanitize(const sanitizer_plan& plan,
                                          std::string& unavailable) override;

  /// The lane process's full reply to the last measure() (device, mismatch, timings,
  /// allocations); default-constructed when that measure() got no reply.
  const messages::kernel_lane_reply& last_reply() const { return last_reply_; }
  /// The device from the latest hello (empty before the first start).
  const messages::kernel_device& device() const { return device_; }
  /// Lane processes started so far (1 + restarts).
  std::uint32_t starts() const { return starts_; }
  /// The running lane process's pid, or -1.
  pid_t process_id() const { return process_.pid(); }
  /// The first valid candidate's kernel, once there is one and the launch names no reference.
  const std::optional<messages::kernel_reference>& first_valid() const { return first_valid_; }

private:
  bool ensure_started(messages::measure_result& result);
  bool read_hello(messages::measure_result& result);
  messages::kernel_lane_request make_request(const messages::measure_request& request);
  void exchange(const messages::kernel_lane_request& request,
                std::chrono::milliseconds timeout,
                messages::measure_result& result);
  void fail_process(messages::measure_result& result,
                    messages::measure_status status,
                    const std::string& what);
  void take_reply(const messages::kernel_lane_request& request, messages::measure_result& result);
  /// The lane requests the sanitizer runs for `requests`: no reference, no strict checks, no
  /// offset, one checked and one timed launch.
  std::vector<messages::kernel_lane_request>
  sanitizer_requests(const std::vector<messages::measure_request>& requests);

  kernel_lane_options options_;
  lane_process process_;
  std::uint64_t sequence_ = 0;
  std::uint32_t starts_ = 0;
  messages::kernel_device device_;
  messages::kernel_lane_reply last_reply_;
  std::optional<messages::kernel_reference> first_valid_;
};

/// Where the lane executable is: $RPL_KERNEL_LANE, else `rpl-kernel-lane` (or `-hip` for
/// api "hip") next to the running executable, else in ../bin from it (the test tree and
/// bundles), else the bare name for PATH.
std::filesystem::path default_kernel_lane_program(std::string_view api = "cuda");

/// The measure_status a lane status stands for: ok; wrong results, red-zone violations, changed
/// inputs and nondeterminism as wrong_result (lane_finding() tells them apart); a faulted kernel
/// as crashed; everything else launch_failed.
messages::measure_status to_measure_status(messages::kernel_lane_status status);
/// measure_result::finding for a lane status: the check that refused ("memory:out_of_bounds",
/// "inputs_modified", "nondeterministic"), empty for the others.
std::string lane_finding(messages::kernel_lane_status status);

} // namespace rpl::workers
