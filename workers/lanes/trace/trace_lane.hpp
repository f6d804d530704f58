#pragma once
/// The trace-timed application lane (`autotune --backend cuda|rocm`): runs a candidate's
/// application under a tracer (our CUPTI tracer, or rocprofv3 --kernel-trace) and returns the GPU
/// durations of the selected kernels' dispatches, not the process's wall time. Selection and the
/// objective are stages/trace/kernel_objective.hpp; this file is the I/O around them.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "messages/wire.hpp"
#include "stages/trace/kernel_objective.hpp"
#include "workers/lanes/lane_backend.hpp"
#include "workers/tracers/cuda/cupti_recorder.hpp"
#include "workers/tracers/rocprofv3/rocprofv3_recorder.hpp"
#include "workers/tracers/trace_recorder.hpp"

namespace rpl::workers {

/// Makes the recorder for one measurement. The recorders take their per-run timeout at
/// construction, so the lane asks for one with each request's `timeout_ms`.
using trace_recorder_factory = std::function<trace_recorder_ptr(std::chrono::milliseconds timeout)>;

/// rocprofv3 recorders like `base` (executable, echo_output) with the request's timeout.
trace_recorder_factory rocprofv3_recorder_factory(rocprofv3_options base);
/// CUPTI recorders like `base` (library, echo_output) with the request's timeout.
trace_recorder_factory cupti_recorder_factory(cupti_recorder_options base);

struct trace_lane_options {
  std::string name = "gpu0";            ///< the lane's name, recorded with every measurement
  trace_recorder_factory make_recorder; ///< required
  /// `--kernel`: ECMAScript, found anywhere in the kernel's name; empty = every user kernel.
  /// Runtime helpers (rocpd::is_runtime_helper) never count.
  std::string kernel_regex;
  /// `--warmup-dispatches`: per process and kernel name, the first N dispatches are discarded.
  std::uint32_t warmup_dispatches = 1;
  /// Where traces go (one sub-folder per run); empty = a private folder under the system's
  /// temporary directory, removed with the lane.
  std::filesystem::path work_folder;
  /// Keep each run's trace (work_folder/<measurement>-<candidate>/{warm-up-N,run-N}/) instead of
  /// deleting it once read, e.g. for --debug or to check the samples by hand.
  bool keep_traces = false;
};

/// Runs `request.warmup` traced runs and discards them, then `request.runs` traced runs, each
/// killed after `request.timeout_ms`. The samples of a run come from its rocpd databases through
/// rocpd::kernel_objective_samples: with one kernel name selected, every remaining dispatch's
/// duration (so samples_ns holds dispatches, not runs); with several, one sample per run, the sum
/// of the per-name medians. The first failing run stops the measurement with failed_run set
/// (warm-ups negative, -1 the first) and a reason "run N: ..." / "warm-up N: ...":
///   - crashed, timed_out, nonzero_exit (exit_code set) or launch_failed as the recorder reports
///     the run (under rocprofv3 an application killed by a signal reads as a non-zero exit,
///     128 + signal, because rocprofv3 passes its status on);
///   - launch_failed when the run left no trace, its trace cannot be read, or no selected
///     dispatch is left (the reason names the regex and the kernels seen, with a fix).
/// Warm-up runs are checked the same way, so a wrong --kernel fails before the timed runs.
/// One object serves one lane; measure() is not reentrant (the engine serialises a lane).
class trace_lane final : public lane_backend {
public:
  /// Throws std::invalid_argument for a kernel_regex that does not compile or a missing
  /// make_recorder, and std::filesystem::filesystem_error when the work folder cannot be made.
  explicit trace_lane(trace_lane_options options);
  ~trace_lane() override;
  trace_lane(const trace_lane&) = delete;
  trace_lane& operator=(const trace_lane&) = delete;

  messages::measure_result measure(const messages::measure_request& request) override;
  const std::string& name() const override { return options_.name; }

  /// The folder traces go to (options.work_folder, or the private one made for this lane).
  const std::filesystem::path& work_folder() const { return work_folder_; }

private:
  trace_lane_options options_;
  stages::rocpd::kernel_selector selector_;
  std::filesystem::path work_folder_;
  bool owns_work_folder_ = false;
  std::uint64_t measurements_ = 0;
};

} // namespace rpl::workers
