#pragma once
/// Starts the engine's local compile workers as separate processes (this same executable, run as
/// `worker compile --connect ENDPOINT`), restarts one that exits, and stops them all at the end.
/// Local workers get the parent-death signal, so a killed engine leaves no worker behind. They
/// sandbox their compilers as remote workers do where bwrap works on this host; where it does not,
/// they run them unsandboxed (`--no-sandbox`) after one warning instead of failing the user's run:
/// the jobs are this user's own templates, on this user's host.

#include <chrono>
#include <filesystem>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace rpl::engine {

struct local_workers_config {
  std::filesystem::path executable; ///< usually /proc/self/exe, resolved
  std::string endpoint;
  std::size_t count = 1;
  std::chrono::milliseconds heartbeat{1000};
  int liveness = 3;
  std::vector<std::string> allowed_compilers; ///< empty: the worker's default list
  /// Files and folders a compile worker's jobs may read besides their folder (--allow-path): those
  /// the user's own build template names (workers/compilers/argv_check.hpp, named_read_paths).
  std::vector<std::string> allowed_paths;
  std::size_t max_restarts = 0; ///< 0: 2 × count
  std::vector<int> cpus; ///< CPUs the workers (and so their compilers) may run on; empty: any
  /// The worker verb and its own options: {"worker", "compile"} (plus --slots 1 and the
  /// allow-list) by default; a proposer worker is {"worker", "propose", "--kind", "rule"}.
  std::vector<std::string> command = {"worker", "compile"};
  std::vector<std::pair<std::string, std::string>> environment; ///< set in the worker only
};

/// `allowed` (empty: the compile worker's default list) with `paths` added: the absolute compiler
/// paths a build template names, which a worker runs only when its allow-list names them
/// (workers/compilers/compiler_choice.hpp). `allowed` unchanged when `paths` is empty.
std::vector<std::string> with_compiler_paths(std::vector<std::string> allowed,
                                             const std::vector<std::string>& paths);

class local_workers {
public:
  explicit local_workers(local_workers_config config);
  ~local_workers();
  local_workers(const local_workers&) = delete;
  local_workers& operator=(const local_workers&) = delete;

  void start();
  /// Reaps exited workers and starts replacements while the restart budget lasts.
  /// Called from the broker thread.
  void supervise();
  /// SIGTERM, then SIGKILL after the grace period.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  /// True once every local worker has exited and the restart budget is spent.
  bool exhausted() const;

private:
  pid_t spawn_one();

  local_workers_config config_;
  std::vector<pid_t> pids_;
  std::size_t restarts_ = 0;
};

} // namespace rpl::engine
