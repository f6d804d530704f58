#pragma once
/// The long-lived replay lane (optimize's lane for a captured dispatch): one `rpl-replay-cuda
/// --serve DIR` process per GPU places the capture at its addresses and restores it once, then
/// answers the kernel lane's request frames (process/replay_server.hpp), so a candidate costs
/// what it costs on the kernel lane: no process start, no capture load, the module cache, restores
/// on the device between launches, the same sampling rule (adaptive, racing, spot checks) and
/// the same statuses and findings. The engine side is the kernel lane itself (kernel_lane.hpp:
/// start, hello, deadlines, restarts after a fault or a hang), given that program; a request
/// needs no launch file: the capture's geometry and parameters are the launch, argv[1] an optional
/// symbol (default: the captured kernel's).

#include <filesystem>
#include <memory>
#include <string>

#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

struct served_replay_lane_options {
  std::string name = "gpu0";
  std::filesystem::path capture; ///< the capture folder (`rocm-perf isolate`)
  std::filesystem::path program; ///< rpl-replay-cuda
  int device = 0;                ///< CUDA ordinal, as CUDA_VISIBLE_DEVICES
  /// Placing a large capture (the allocation walk, restoring its regions) takes longer than a
  /// kernel lane's start.
  std::chrono::milliseconds start_timeout{std::chrono::minutes(3)};
  /// Added to a request's timeout_ms: the checked launch reads every region back.
  std::chrono::milliseconds reply_allowance{std::chrono::seconds(30)};
  /// As kernel_lane_options: adaptive sampling and racing inside the process (unset: fixed count).
  std::optional<stages::sampling_target> sampling;
  std::shared_ptr<race_board> race;
};

class served_replay_lane final : public lane_backend {
public:
  explicit served_replay_lane(served_replay_lane_options options);

  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return lane_.name(); }
  /// Starts the process (placement and restore of the capture) ahead of the first candidate.
  void prepare() override { lane_.prepare(); }
  /// None: under compute-sanitizer the tool's own allocations take the captured addresses and
  /// the placement fails (measured on an H200, bench/replay_lane/oob_probe.sh); says so.
  std::vector<sanitizer_outcome> sanitize(const sanitizer_plan& plan,
                                          std::string& unavailable) override;

  /// The process's full reply to the last measure().
  const messages::kernel_lane_reply& last_reply() const { return lane_.last_reply(); }
  /// Processes started so far (1 + restarts).
  std::uint32_t starts() const { return lane_.starts(); }

private:
  kernel_lane lane_;
};

} // namespace rpl::workers
