#include "workers/process/exit_description.hpp"

#include <cstdio>
#include <cstring>
#include <sys/wait.h>

#include "workers/process/child_process.hpp"

namespace rpl::workers {

std::string describe_signal(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  const char* description = ::sigdescr_np(sig);
  if (abbrev == nullptr)
    return "signal " + std::to_string(sig);
  std::string text = std::string("SIG") + abbrev;
  if (description != nullptr)
    text += std::string(" (") + description + ")";
  return text;
}

std::string describe_timeout(std::chrono::milliseconds timeout) {
  if (timeout < std::chrono::seconds(1))
    return std::to_string(timeout.count()) + " ms";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(timeout.count()) / 1000.0);
  return text;
}

std::string describe_exit(const child_outcome& outcome,
                          std::optional<std::chrono::milliseconds> timeout) {
  if (!outcome.launched)
    return "could not be started: " + outcome.launch_error;
  // Checked before the signal: a timed-out child was killed by us (SIGKILL), not by its own bug.
  if (outcome.timed_out) {
    return timeout ? "timed out after " + describe_timeout(*timeout) : std::string("timed out");
  }
  if (outcome.term_signal != 0)
    return "was killed by " + describe_signal(outcome.term_signal);
  return "exited with status " + std::to_string(outcome.exit_code);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by " + describe_signal(WTERMSIG(status));
  if (WIFSTOPPED(status))
    return "was stopped by " + describe_signal(WSTOPSIG(status));
  return "ended with wait status " + std::to_string(status);
}

} // namespace rpl::workers
