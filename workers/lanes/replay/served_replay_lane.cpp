#include "workers/lanes/replay/served_replay_lane.hpp"

namespace rpl::workers {

namespace {

kernel_lane_options lane_options(const served_replay_lane_options& o) {
  kernel_lane_options out;
  out.name = o.name;
  out.program = o.program;
  out.program_args = {"--serve", o.capture.string()};
  out.device = o.device;
  out.start_timeout = o.start_timeout;
  out.reply_allowance = o.reply_allowance;
  out.sampling = o.sampling;
  out.race = o.race;
  return out;
}

} // namespace

served_replay_lane::served_replay_lane(served_replay_lane_options options)
    : lane_(lane_options(options)) {}

messages::measure_result served_replay_lane::measure(const messages::measure_request& request) {
  messages::measure_request r = request;
  if (!r.launch) {
    messages::kernel_launch launch; // the capture's geometry and parameters
    if (r.argv.size() > 1)
      launch.symbol = r.argv[1];
    r.launch = std::move(launch);
  }
  if (r.argv.size() > 1)
    r.argv.resize(1);
  return lane_.measure(r);
}

std::vector<sanitizer_outcome> served_replay_lane::sanitize(const sanitizer_plan& plan,
                                                            std::string& unavailable) {
  (void)plan;
  unavailable = "no sanitizer pass on a replayed dispatch: compute-sanitizer's own allocations "
                "take the captured addresses, so the capture cannot be placed under it; the "
                "replay's own checks (every region against the capture, red zones, the region "
                "next door) checked memory; with --app-build, each accepted change is run under "
                "compute-sanitizer in the rebuilt application after the loop";
  return {};
}

} // namespace rpl::workers
