#pragma once
/// A long-lived child that talks in frames: its stdin and stdout are both ends of one Unix stream
/// socket held by the parent (so a write to a dead child is an error, never SIGPIPE in the
/// engine), its stderr a pipe whose last few KiB are kept to quote in reasons. It leads its own
/// process group, dies with the thread that started it (PR_SET_PDEATHSIG), and the destructor
/// kills and reaps it. Frames are messages/kernel_lane.hpp's: a 4-byte length, then the payload.
///
/// workers/process/child_process runs children to completion with stdin closed; this is the
/// other shape, a conversation, and lives beside the one lane that needs it.

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace rpl::workers {

struct lane_process_options {
  std::vector<std::string> argv; ///< argv[0] is looked up in PATH (execvp)
  /// Changes to the child's environment over the parent's: a value sets, nullopt removes.
  std::vector<std::pair<std::string, std::optional<std::string>>> environment;
  /// SIGKILL the child when the spawning thread exits: spawn from a thread that outlives it.
  bool kill_on_parent_death = true;
};

/// What waiting for a frame gave.
enum class frame_wait {
  frame,     ///< a complete frame arrived
  timed_out, ///< the deadline passed first
  closed,    ///< the child closed its end (it exited, or is exiting)
  broken,    ///< an impossible frame length or an I/O error: the stream is out of step
};

class lane_process {
public:
  using clock = std::chrono::steady_clock;

  /// Starts the child. Never throws for an expected failure: running() is false and
  /// launch_error() says why ("execvp rpl-kernel-lane: No such file or directory").
  static lane_process spawn(const lane_process_options& options);

  /// No process: running() is false.
  lane_process() = default;
  lane_process(lane_process&& other) noexcept;
  lane_process& operator=(lane_process&& other) noexcept;
  lane_process(const lane_process&) = delete;
  lane_process& operator=(const lane_process&) = delete;
  ~lane_process();

  /// True from a successful exec until stop()/kill() reaped it.
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  /// True when the child has ended but is not reaped yet (stop() reaps it).
  bool has_exited() const;
  const std::string& launch_error() const { return launch_error_; }
  /// The exit status of the child reaped last (by stop() or kill()); nullopt when it was killed
  /// by a signal, or none was reaped yet.
  std::optional<int> exit_code() const { return exit_code_; }

  /// Writes one frame, giving up at `deadline`; false with `error` when the child is gone or
  /// not reading.
  bool send(const std::string& payload, clock::time_point deadline, std::string& error);
  /// Waits for the next frame until `deadline`, keeping the child's stderr meanwhile.
  frame_wait receive(std::string& payload, clock::time_point deadline, std::string& error);

  /// The last bytes the child wrote to stderr, trimmed; empty when it wrote none.
  std::string stderr_tail() const;

  /// Closes the child's stdin (its cue to exit), waits up to `grace`, then kills its group.
  /// Returns how it ended ("exited with status 4", "was killed by SIGKILL (Killed)").
  std::string stop(std::chrono::milliseconds grace);
  /// Kills the group at once and reaps it; how it ended.
  std::string kill();

private:
  void drain_stderr();
  std::string reap(clock::time_point deadline);
  void close_fds();

  pid_t pid_ = -1;
  int channel_fd_ = -1; ///< frames, both ways
  int stderr_fd_ = -1;
  std::string launch_error_;
  std::string pending_; ///< received bytes that are not a whole frame yet
  std::string stderr_tail_;
  std::optional<int> exit_code_;
};

} // namespace rpl::workers
