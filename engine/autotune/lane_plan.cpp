#include "engine/autotune/lane_plan.hpp"

#include <spdlog/spdlog.h>

#include "workers/devices/nvml_probe.hpp"
#include "workers/lanes/adaptive/adaptive_lane.hpp"
#include "workers/lanes/clocks/clock_watch_lane.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/lanes/recorded/recorded_lane.hpp"
#include "workers/lanes/replay/replay_lane.hpp"
#include "workers/lanes/timing/timing_lane.hpp"
#include "workers/lanes/trace/trace_lane.hpp"
#include "workers/replay/replay_run.hpp"
#include "workers/tracers/cuda/cupti_recorder.hpp"
#include "workers/tracers/rocprofv3/rocprofv3_recorder.hpp"

namespace rpl::engine {

namespace {

workers::lane_backend_ptr with_sampling(workers::lane_backend_ptr lane,
                                        const autotune_inputs& inputs,
                                        std::uint32_t batch_runs) {
  if (!inputs.sampling) {
    return lane;
  }
  return std::make_unique<workers::adaptive_lane>(std::move(lane), *inputs.sampling, batch_runs);
}

/// The kernel lane samples adaptively inside its process (one request per candidate), so it is
/// not wrapped in adaptive_lane.
workers::lane_backend_ptr kernel_lane_for(const autotune_options& options,
                                          const autotune_inputs& inputs,
                                          const workers::nvidia_device& device,
                                          const std::shared_ptr<workers::race_board>& race) {
  workers::kernel_lane_options k;
  k.name = "gpu" + std::to_string(device.index);
  k.program = options.kernel_lane_program.empty() ? workers::default_kernel_lane_program()
                                                  : options.kernel_lane_program;
  k.device = device.index;
  k.sampling = inputs.sampling;
  k.time_cap =
      std::chrono::milliseconds(static_cast<std::int64_t>(options.max_candidate_time_s * 1000.0));
  k.race = race;
  return std::make_unique<workers::kernel_lane>(std::move(k));
}

/// An application lane for one device: each run traced, the selected kernels' dispatches timed.
workers::lane_backend_ptr trace_lane_for(const autotune_options& options,
                                         const autotune_inputs& inputs,
                                         int device,
                                         const std::string& name) {
  workers::trace_lane_options t;
  t.name = name;
  t.kernel_regex = options.kernel_regex;
  t.warmup_dispatches = options.warmup_dispatches;
  const auto index = std::to_string(device);
  if (inputs.lane_kind == "cuda") {
    workers::cupti_recorder_options r;
    r.library = *workers::find_cupti_tracer({});
    r.environment = {{"CUDA_VISIBLE_DEVICES", index}};
    t.make_recorder = workers::cupti_recorder_factory(r);
  } else {
    workers::rocprofv3_options r;
    r.executable = *workers::find_rocprofv3({});
    r.environment = {{"HIP_VISIBLE_DEVICES", index}, {"ROCR_VISIBLE_DEVICES", index}};
    t.make_recorder = workers::rocprofv3_recorder_factory(r);
  }
  try {
    return std::make_unique<workers::trace_lane>(std::move(t));
  } catch (const std::invalid_argument& error) {
    throw config_error(error.what());
  }
}

} // namespace

std::size_t lane_count(const autotune_options& options, const autotune_inputs& inputs) {
  return inputs.lane_kind == "timing" || inputs.lane_kind == "recorded" ? options.lanes
                                                                        : inputs.devices.size();
}

lane_plan make_lanes(const autotune_options& options,
                     const autotune_inputs& inputs,
                     const std::vector<int>& lane_cpus) {
  lane_plan plan;
  if (inputs.lane_kind == "recorded") {
    for (std::size_t i = 0; i < options.lanes; ++i)
      plan.lanes.push_back(
          std::make_unique<lane_worker>(std::make_unique<workers::recorded_lane>(
                                            inputs.landscape, "recorded" + std::to_string(i)),
                                        -1));
    return plan;
  }
  if (inputs.lane_kind == "timing") {
    for (std::size_t i = 0; i < options.lanes; ++i) {
      auto lane = std::make_unique<workers::timing_lane>("cpu" + std::to_string(i));
      plan.lanes.push_back(std::make_unique<lane_worker>(
          with_sampling(std::move(lane), inputs, std::max<std::uint32_t>(1, options.runs / 2)),
          i < lane_cpus.size() ? lane_cpus[i] : -1));
    }
    return plan;
  }
  // Clock evidence for NVIDIA GPUs, read through NVML where the driver has it.
  std::shared_ptr<workers::gpu_clock_probe> clocks;
  if (inputs.lane_kind == "kernel" || inputs.lane_kind == "cuda" || inputs.lane_kind == "replay") {
    std::string why_not;
    clocks = workers::open_nvml_probe(why_not);
    if (!clocks) {
      spdlog::warn("no clock evidence for this run: {}; measurements are not checked for "
                   "throttling",
                   why_not);
    }
  }
  // One race for the run's GPUs (one device model): a bound set on one lane races the others too.
  const auto race =
      options.race && inputs.sampling ? std::make_shared<workers::race_board>() : nullptr;
  for (const auto& device : inputs.devices) {
    plan.devices.push_back(device.name + " (" + device.uuid + ")");
    workers::lane_backend_ptr lane;
    if (inputs.lane_kind == "kernel") {
      lane = kernel_lane_for(options, inputs, device, race);
    } else if (inputs.lane_kind == "replay") {
      workers::replay_lane_options r;
      r.name = "gpu" + std::to_string(device.index);
      r.capture = options.replay;
      r.program = *workers::replay::find_cuda_replay_program();
      r.device = device.index;
      r.device_model = device.name;
      r.device_uuid = device.uuid;
      // One process per measurement (the capture restored each time): batches of --runs.
      lane = with_sampling(std::make_unique<workers::replay_lane>(std::move(r)), inputs,
                           std::max<std::uint32_t>(1, options.runs));
    } else {
      lane = with_sampling(
          trace_lane_for(options, inputs, device.index, "gpu" + std::to_string(device.index)),
          inputs, 1);
    }
    if (clocks && !device.uuid.empty()) {
      lane = std::make_unique<workers::clock_watch_lane>(std::move(lane), clocks, device.uuid);
    }
    plan.lanes.push_back(std::make_unique<lane_worker>(std::move(lane), -1));
  }
  return plan;
}

} // namespace rpl::engine
