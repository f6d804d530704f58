#include "workers/lanes/replay/replay_lane.hpp"

#include <algorithm>

#include "workers/replay/replay_run.hpp"

namespace rpl::workers {

replay_lane::replay_lane(replay_lane_options options) : options_(std::move(options)) {}

messages::measure_result replay_lane::measure(const messages::measure_request& request) {
  messages::measure_result result;
  result.lane = options_.name;
  result.device_model = options_.device_model;
  result.device_uuid = options_.device_uuid;
  if (request.argv.empty()) {
    result.status = messages::measure_status::launch_failed;
    result.reason = "the run template is empty; with --replay it is `{BIN} [KERNEL_SYMBOL]`";
    return result;
  }
  replay::replay_run_options run;
  run.program = options_.program;
  run.capture = options_.capture;
  run.code_object = request.argv[0];
  if (request.argv.size() > 1) {
    run.kernel = request.argv[1];
  }
  run.iterations = static_cast<int>(std::max<std::uint32_t>(1, request.runs));
  run.warmup = static_cast<int>(request.warmup);
  run.timeout = std::chrono::milliseconds(std::max<std::uint64_t>(
      10000, std::uint64_t{request.timeout_ms} * (request.runs + request.warmup + 1)));
  run.environment = {{"CUDA_VISIBLE_DEVICES", std::to_string(options_.device)}};
  const auto outcome = replay::run_replay(run);
  result.exit_code = outcome.exit_code;
  const auto& doc = outcome.document;
  if (outcome.exit_code == 0 && doc.is_object() && doc["timing"].is_object()) {
    result.status = messages::measure_status::ok;
    result.samples_ns = doc["timing"].value("samples_ns", std::vector<std::int64_t>{});
    return result;
  }
  if (outcome.exit_code == 3 && doc.is_object() && doc.contains("red_zones") &&
      doc["red_zones"].is_object() && doc["red_zones"]["violation"].is_object()) {
    result.status = messages::measure_status::wrong_result;
    result.finding = "memory:out_of_bounds";
    result.reason =
        "out_of_bounds: " + doc["red_zones"]["violation"].value("message", std::string());
    return result;
  }
  if (outcome.exit_code == 3 && doc.is_object()) {
    result.status = messages::measure_status::wrong_result;
    const auto& mismatched = doc["verification"]["mismatched_regions"];
    result.reason = "the replayed candidate left " + std::to_string(mismatched.size()) +
                    " regions unlike the captured after-state (" +
                    doc["verification"].value("mode", std::string()) + ")";
    if (!mismatched.empty()) {
      result.reason += ", first " + mismatched[0].value("base", std::string()) + " at byte " +
                       std::to_string(mismatched[0].value("first_offset", 0ull));
    }
    return result;
  }
  result.status = outcome.message.find("timed out") != std::string::npos
                      ? messages::measure_status::timed_out
                      : messages::measure_status::launch_failed;
  result.reason = "rpl-replay-cuda (exit " + std::to_string(outcome.exit_code) +
                  "): " + outcome.message.substr(0, 2000);
  return result;
}

} // namespace rpl::workers
