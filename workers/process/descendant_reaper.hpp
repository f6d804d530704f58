#pragma once
/// Finding and killing what a finished run left running. This process becomes the child
/// subreaper (PR_SET_CHILD_SUBREAPER), so a run's orphans, even those that called setsid(), are
/// reparented to it instead of init and stay in its process tree; each run marks its processes
/// with a token in the environment (RPL_RUN_TOKEN), inherited by everything it starts, so that
/// several lanes' runs, each on its own thread, are told apart. child_process uses this; other
/// code rarely needs it.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace rpl::workers {

/// The environment variable that marks a run's processes: its value is a ':'-separated list of
/// tokens, an outer reaper's first (a rocm-perf run by a test keeps the test's token too).
inline constexpr const char* run_token_variable = "RPL_RUN_TOKEN";

/// Makes this process the child subreaper, once; false when the kernel refused (then orphans go
/// to init and reap_leftovers() searches every process instead of this process's tree).
bool become_subreaper();

/// A token unique among live processes: "<pid>.<sequence>".
std::string new_run_token();

/// The value RPL_RUN_TOKEN gets in a child: this process's own value, if it has one, then `token`.
std::string run_token_value(const std::string& token);

/// True when /proc/<pid>/environ holds `token` in RPL_RUN_TOKEN's list. False when unreadable.
bool carries_run_token(pid_t pid, const std::string& token);

/// How many processes (and threads) the system has created since boot: the `processes` line of
/// /proc/stat, or nullopt when unreadable. Read just before a run is spawned, it lets
/// reap_leftovers() look only at processes younger than the run (see the README).
std::optional<std::uint64_t> processes_created();

/// A run whose leader has exited (and is not reaped yet: its pid, which is also its process
/// group's id, cannot be reused while the leftovers are sought).
struct finished_run {
  pid_t leader = -1;            ///< the run's own process, reaped by its owner, never here
  std::string token;            ///< its RPL_RUN_TOKEN
  bool group_signalled = false; ///< its group was already killed: members left in it do not count
  /// processes_created() just before the leader was spawned; nullopt: every process is searched.
  std::optional<std::uint64_t> created_before;
};

/// Kills (SIGKILL) every live process of the run other than its leader: those carrying its token
/// and those still in its process group; waits (at most a few seconds) until they are dead and
/// reaps those that became this process's children. Also reaps zombies that were reparented here
/// (see the README for how they are told from children that other code waits for). Returns the
/// pids found running, in the order found; members of a group that was already signalled are
/// killed but not returned.
std::vector<pid_t> reap_leftovers(const finished_run& run);

/// Registers a run whose leader child_process just started (called on the spawning thread, after
/// the spawn): kill_live_runs() finds it by that thread until it is reaped.
void add_live_run(const finished_run& run);
/// Called by the run's owner once its leader has exited, before reap_leftovers(): true when the
/// owner is to seek the leftovers itself (then remove_live_run() after them), false when
/// kill_live_runs() took the run and dealt with them (it waits here until that is done). Either
/// way the owner may then reap the leader.
bool begin_reaping_live_run(pid_t leader);
/// Unregisters the run of `leader` (no-op when it is not registered).
void remove_live_run(pid_t leader);

/// Kills the runs that thread `spawner` started and has not reaped yet, whole: the leader's group,
/// then, once the leader has exited, every process that carries the run's token (setsid daemons,
/// double forks) as reap_leftovers() does; waits (at most a few seconds each) until they are dead.
/// For a caller that gives up on a thread still inside a run (a measurement abandoned by a stop,
/// the engine about to exit): without it, what escaped the run's group outlives the engine (its
/// orphans go to init). A run whose owner is already seeking its leftovers is waited for instead.
/// The leaders are left for their owner to reap. Returns the pids found running outside the
/// leaders' groups, in the order found. A run the thread spawns after this returns is not
/// affected.
std::vector<pid_t> kill_live_runs(std::thread::id spawner);

/// "left 2 processes running (pids 812, 815)": the predicate for a log line whose subject names
/// the run or the candidate.
std::string describe_leftovers(const std::vector<pid_t>& pids);

/// Held by child_process::spawn across fork(), until the new pid is registered, so that a sweep
/// for reparented zombies never takes a direct child's exit status before its owner reads it.
std::unique_lock<std::mutex> lock_direct_children();
/// Registers a direct child (with the lock from lock_direct_children held).
void add_direct_child(pid_t pid, const std::unique_lock<std::mutex>& held);
/// Unregisters a direct child once its owner has reaped it.
void remove_direct_child(pid_t pid);

} // namespace rpl::workers
