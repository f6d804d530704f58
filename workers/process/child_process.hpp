#pragma once
/// Child processes run as argv vectors (never through a shell), each leading its own process group
/// so that a timeout or a cancel kills its grandchildren too, and (by default) tracked beyond it:
/// what the child leaves running when it exits is killed and reported (descendant_reaper.hpp).
/// Used by the compile worker (compilers), the lanes and tracers (benchmark and profiled runs).
/// Expected failures (missing binary, crash, timeout) are reported in child_outcome, never thrown.

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

// describe_signal() and describe_exit() live there; included because every caller of run_child
// reports how the child ended.
#include "workers/process/exit_description.hpp"

namespace rpl::workers {

/// What to run and how.
struct child_options {
  std::vector<std::string> argv; ///< argv[0] is looked up in PATH (execvp)
  std::filesystem::path cwd;     ///< empty = inherit the parent's working directory
  bool capture_output = true;    ///< stdout+stderr merged into one pipe, else both to /dev/null
  /// With capture_output: false sends stderr to /dev/null and captures stdout alone (a version
  /// line that a helper's error message printed first must not become part of it).
  bool capture_stderr = true;
  std::size_t max_output_bytes = 65536; ///< keep the first part; the rest is read and dropped
  /// Deliver SIGKILL to the child when the thread that spawned it exits (PR_SET_PDEATHSIG), so a
  /// worker killed with SIGKILL does not leave its compiler running. Only for spawning threads that
  /// outlive their children (the signal follows the thread, not the process).
  bool kill_on_parent_death = false;
  /// Changes to the child's environment, applied in order over the parent's: a value sets the
  /// variable, nullopt removes it. The parent's own environment never changes.
  std::vector<std::pair<std::string, std::optional<std::string>>> environment;
  /// Track everything the child starts, even what escapes its process group (setsid, double
  /// fork): when it exits, whatever it left running is killed and listed in
  /// child_outcome::leftovers (descendant_reaper.hpp). Makes this process the child subreaper and
  /// sets RPL_RUN_TOKEN in the child's environment.
  bool reap_descendants = true;
};

/// Everything known about a finished (or never started) child.
struct child_outcome {
  bool launched = false;
  std::string launch_error;         ///< e.g. "execvp g++: No such file or directory"
  bool timed_out = false;           ///< the caller's deadline expired and the group was killed
  int exit_code = -1;               ///< valid when the child exited normally, else -1
  int term_signal = 0;              ///< the signal that killed it, else 0
  std::chrono::nanoseconds wall{0}; ///< steady_clock, from just before fork to the exit being seen
  std::string output;               ///< merged stdout+stderr, at most max_output_bytes
  bool output_truncated = false;
  /// Descendants still running when the child exited (setsid daemons, background jobs), killed
  /// and reaped then; members of a group already killed at a timeout or cancel are not listed.
  std::vector<pid_t> leftovers;

  /// True when the child ran and exited with status 0.
  bool succeeded() const { return launched && !timed_out && term_signal == 0 && exit_code == 0; }
};

/// One running child process (move-only). The destructor kills its process group and reaps it if
/// it is still running, so a child_process never leaves a zombie or an orphaned group behind.
class child_process {
public:
  /// Forks and execs `options.argv`. Never throws for an expected failure: a child that could not
  /// be started has launched() == false and finish() reports launch_error.
  static child_process spawn(const child_options& options);

  child_process(child_process&& other) noexcept;
  child_process& operator=(child_process&& other) noexcept;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process();

  /// True when exec succeeded.
  bool launched() const { return outcome_.launched; }
  /// The child's pid (also its process group id), or -1 when it never started.
  pid_t pid() const { return pid_; }
  /// Read end of the output pipe, for poll(); -1 when not capturing or after EOF.
  int output_fd() const { return output_fd_; }
  /// A pidfd that becomes readable when the child exits; -1 when the kernel has no pidfd_open
  /// (callers then poll try_reap() on a short timer).
  int exit_fd() const { return exit_fd_; }
  /// True once try_reap() has seen the child exit (or it never started).
  bool exited() const { return reaped_; }

  /// Reads whatever output is available without blocking; closes the pipe at EOF.
  void drain_output();
  /// Non-blocking: returns true when the child has exited (and records its status). Any process
  /// still left in its group, or (with reap_descendants) carrying its run token, is killed first,
  /// so nothing it started outlives it.
  bool try_reap();
  /// Sends `sig` to the child's whole process group (grandchildren included).
  void kill_group(int sig = SIGKILL);
  /// Kills the group with SIGKILL and marks the outcome timed_out.
  void time_out();
  /// Waits for the child to exit if it has not yet, drains the remaining output and returns the
  /// outcome. Call once.
  child_outcome finish();

private:
  child_process() = default;
  void reap_blocking();
  void record_status(int status);
  void close_fds();

  pid_t pid_ = -1;
  int output_fd_ = -1;
  int exit_fd_ = -1;
  bool reaped_ = false;
  std::size_t max_output_bytes_ = 0;
  std::string run_token_;        ///< empty: descendants are not tracked beyond the group
  bool group_signalled_ = false; ///< kill_group() was called: group members are expected to die
  std::optional<std::uint64_t> created_before_; ///< processes_created() before the fork
  std::chrono::steady_clock::time_point start_{};
  child_outcome outcome_;
};

/// Runs a child to completion, draining its output, and kills its whole process group at
/// `timeout` (timed_out = true, term_signal = SIGKILL).
child_outcome run_child(const child_options& options, std::chrono::milliseconds timeout);

/// The first non-blank line of a program's output, trailing blanks removed, cut to `max_chars`
/// (with "..."), for quoting it in a reason; empty when there is none.
std::string first_output_line(std::string_view output, std::size_t max_chars = 200);

} // namespace rpl::workers
