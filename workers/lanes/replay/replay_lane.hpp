#pragma once
/// The replay lane (`autotune --replay DIR`): each candidate is measured on a captured dispatch
/// (`rocm-perf isolate`) instead of the whole application. The run template's argv[0] is the
/// candidate's code object ({BIN}, built with nvcc -cubin) and an optional argv[1] the kernel's
/// symbol (default: the captured one); the kernel must take the captured parameter list. Each
/// measurement is one rpl-replay-cuda process on the lane's device (CUDA_VISIBLE_DEVICES): the
/// capture's memory restored at its original addresses, the candidate launched, its output checked
/// bit-exactly against the captured after-state (a difference is wrong_result, with the regions),
/// then `runs` launches timed after `warmup`, by the program's default (each launch's GPU
/// start/end from CUPTI's kernel records, as application lanes read the trace; events where CUPTI
/// cannot be used).

#include <filesystem>
#include <string>

#include "workers/lanes/lane_backend.hpp"

namespace rpl::workers {

struct replay_lane_options {
  std::string name;              ///< "gpu0"
  std::filesystem::path capture; ///< the capture folder
  std::filesystem::path program; ///< rpl-replay-cuda
  int device = 0;                ///< CUDA ordinal, passed as CUDA_VISIBLE_DEVICES
  std::string device_model;
  std::string device_uuid;
};

class replay_lane final : public lane_backend {
public:
  explicit replay_lane(replay_lane_options options);
  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return options_.name; }

private:
  replay_lane_options options_;
};

} // namespace rpl::workers
