#pragma once
/// rpl-replay-cuda's default clock: CUPTI's kernel activity records (CONCURRENT_KERNEL, the kind
/// the tracer records), so that a replayed launch is timed as the trace times the application's
/// dispatches (workers/tracers/cupti/kernel_activity.hpp reads both). CUPTI is loaded at run
/// time (dlopen, through this program's run path), so that a host without it, or a process that
/// another CUPTI client already holds (Nsight, our tracer or capture library), still replays,
/// timed with events instead: attach() says why it could not.
///
/// Use: attach() after the regions are placed, restored and verified (CUPTI allocates memory of
/// its own when it starts recording), then start(), launch, note last_launch_id() after each
/// launch, synchronize, and finish() for every kernel record delivered.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "workers/replay/replay_timing.hpp"

namespace rpl::workers::replay {

class cupti_kernel_timer {
public:
  /// Loads CUPTI (RPL_CUPTI_LIBRARY, else libcupti.so.<CUDA major> through the run path, else
  /// libcupti.so), subscribes to kernel launches and registers the activity buffers. Null, with
  /// `why_not` set to one sentence, when any of that fails.
  static std::unique_ptr<cupti_kernel_timer> attach(std::string& why_not);
  ~cupti_kernel_timer();
  cupti_kernel_timer(const cupti_kernel_timer&) = delete;
  cupti_kernel_timer& operator=(const cupti_kernel_timer&) = delete;

  /// Records kernels from now on; false, with `why_not`, when CUPTI refuses.
  bool start(std::string& why_not);
  /// The CUPTI correlation id of the last kernel launch this process made (its kernel record
  /// carries the same id); 0 before any.
  std::uint32_t last_launch_id() const;

  struct records {
    std::vector<kernel_span> spans; ///< records with both timestamps
    std::size_t incomplete = 0;     ///< records without them
    std::size_t dropped = 0;        ///< CUPTI's count of records it had no buffer for
  };
  /// Stops recording, flushes every buffer (the caller synchronized first) and returns what came.
  records finish();

  struct library; ///< the CUPTI functions, resolved

private:
  explicit cupti_kernel_timer(library* cupti) : cupti_(cupti) {}
  library* cupti_; ///< never freed: CUPTI may hand back buffers until the process ends
  bool recording_ = false;
};

} // namespace rpl::workers::replay
