#include "workers/tracers/cuda/cupti_recorder.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <poll.h>

#include <time.h>

#include "workers/process/find_program.hpp"
#include "workers/tracers/detail/recorded_child.hpp"

namespace rpl::workers {
namespace {

/// Runs `options` like run_child, except at `timeout`: SIGTERM to the group first (the tracer's
/// signal handler writes the database a last time), SIGKILL `grace` later. The outcome says
/// timed_out either way. Output handling follows tracers_detail::run_recorded_child.
child_outcome run_traced_child(child_options options,
                               std::chrono::milliseconds timeout,
                               std::chrono::milliseconds grace,
                               bool echo,
                               const std::string& title) {
  options.max_output_bytes = 1 << 20;
  child_process child = child_process::spawn(options);
  if (!child.launched()) {
    return child.finish();
  }
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + timeout;
  bool terminated = false; // SIGTERM sent
  bool killed = false;     // SIGKILL sent
  while (!child.try_reap()) {
    const auto now = clock::now();
    if (now >= deadline) {
      if (!terminated) {
        terminated = true;
        child.kill_group(SIGTERM);
        deadline = now + grace;
      } else if (!killed) {
        killed = true;
        child.kill_group(SIGKILL);
        deadline = now + std::chrono::hours(1); // reaped as soon as the kernel lets go of it
      }
      continue;
    }
    pollfd fds[2]{};
    nfds_t count = 0;
    if (child.output_fd() >= 0)
      fds[count++] = pollfd{child.output_fd(), POLLIN, 0};
    if (child.exit_fd() >= 0)
      fds[count++] = pollfd{child.exit_fd(), POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
    if (child.exit_fd() < 0) // no pidfd: nothing wakes us at the exit, so look again after 1 ms
      wait = std::min<std::chrono::nanoseconds>(wait, std::chrono::milliseconds(1));
    const timespec ts{static_cast<time_t>(wait.count() / 1'000'000'000),
                      static_cast<long>(wait.count() % 1'000'000'000)};
    const int ready = ::ppoll(fds, count, &ts, nullptr);
    if (ready > 0 && count > 0 && fds[0].fd == child.output_fd() && fds[0].revents != 0) {
      child.drain_output();
    }
  }
  child_outcome outcome = child.finish();
  outcome.timed_out = outcome.timed_out || terminated;
  if (echo) {
    std::fprintf(stderr, "--- %s ---\n%s", title.c_str(), outcome.output.c_str());
  }
  return outcome;
}

} // namespace

std::optional<std::filesystem::path> find_cupti_tracer(const std::filesystem::path& explicit_path) {
  if (!explicit_path.empty()) {
    return explicit_path;
  }
  return find_installed(
      "RPL_CUPTI_TRACER",
      {"../lib/librpl_cupti_tracer.so", "librpl_cupti_tracer.so", "lib/librpl_cupti_tracer.so"});
}

cupti_recorder::cupti_recorder(cupti_recorder_options options) : options_(std::move(options)) {}

recorded_run cupti_recorder::record(const std::vector<std::string>& argv,
                                    const std::filesystem::path& folder,
                                    unsigned run) {
  std::filesystem::create_directories(folder);
  child_options child;
  child.argv = argv;
  child.environment = {{"CUDA_INJECTION64_PATH", options_.library.string()},
                       {"RPL_TRACE_DIR", folder.string()}};
  child.environment.insert(child.environment.end(), options_.environment.begin(),
                           options_.environment.end());
  const auto outcome =
      run_traced_child(child, options_.timeout, options_.term_grace, options_.echo_output,
                       "application, run " + std::to_string(run));
  recorded_run out;
  out.wall = outcome.wall;
  out.leftovers = outcome.leftovers;
  const std::string app = tracers_detail::join_argv(argv);
  // Also after a failure: what the tracer wrote before the end is the partial trace.
  out.databases = tracers_detail::find_databases(folder);
  if (!outcome.succeeded()) {
    out.status = record_status::run_failed;
    out.reason = app + " " + tracers_detail::describe_failure(outcome) +
                 " under the CUPTI tracer; fix: run it alone, or with --debug to see its output\n" +
                 tracers_detail::output_tail(outcome);
    return out;
  }
  if (out.databases.empty()) {
    out.status = record_status::no_trace;
    out.reason = app + " left no trace: the tracer writes a database only for processes that use "
                       "CUDA; fix: check that the application launches CUDA kernels, and run with "
                       "--debug to see the tracer's messages";
  }
  return out;
}

} // namespace rpl::workers
