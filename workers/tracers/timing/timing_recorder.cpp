#include "workers/tracers/timing/timing_recorder.hpp"

#include "workers/tracers/detail/recorded_child.hpp"

namespace rpl::workers {

timing_recorder::timing_recorder(timing_recorder_options options) : options_(options) {}

recorded_run timing_recorder::record(const std::vector<std::string>& argv,
                                     const std::filesystem::path& /*folder*/,
                                     unsigned run) {
  child_options child;
  child.argv = argv;
  const auto outcome = tracers_detail::run_recorded_child(
      child, options_.timeout, options_.echo_output, "application, run " + std::to_string(run));
  recorded_run out;
  out.wall = outcome.wall;
  out.leftovers = outcome.leftovers;
  if (!outcome.succeeded()) {
    out.status = record_status::run_failed;
    out.reason = tracers_detail::join_argv(argv) + " " + tracers_detail::describe_failure(outcome) +
                 "; fix: check that the application runs on its own (--debug shows its output)";
  }
  return out;
}

} // namespace rpl::workers
