#pragma once
/// The compile worker process (`rocm-perf worker compile`): the compile job (a private directory,
/// the sources, an allow-listed compiler as a child process, the artifact) behind the generic
/// worker_session, which speaks docs/protocol.md to the engine's broker (one job per slot,
/// heartbeats both ways while the compilers run, reconnects). READY names the toolchain of every
/// allow-listed compiler this host has (toolchain_identity.hpp), its cores, free memory and slots.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "workers/protocol/curve_keys.hpp"

namespace rpl::workers {

/// Whether compilers run in a bubblewrap sandbox (compile_sandbox.hpp).
enum class sandbox_mode : std::uint8_t {
  off,          ///< `--no-sandbox`: compilers run as the worker's own children
  if_available, ///< sandboxed where bwrap works, else unsandboxed after one warning (the default of
                ///< this struct: tests and programs that embed a worker)
  required, ///< `worker compile`'s default: a worker that cannot sandbox does not start (exit 2)
};

/// Configuration of a compile worker. Invalid configuration throws std::invalid_argument from
/// run_compile_worker at start-up.
struct compile_worker_options {
  std::string endpoint; ///< the broker's ROUTER, ipc:// or tcp://
  /// The compilers this worker may run as argv[0] (--allow-compiler replaces them): a name, run as
  /// this worker's PATH finds it, or an absolute path (compiler_choice.hpp).
  std::vector<std::string> allowed_compilers = {"g++",   "gcc",  "clang++", "clang",
                                                "hipcc", "nvcc", "c++",     "cc"};
  std::chrono::milliseconds heartbeat{1000}; ///< send HEARTBEAT after this long without sending
  int liveness = 3; ///< intervals of broker silence before the broker is presumed dead
  std::chrono::milliseconds reconnect_initial{1000}; ///< first back-off; doubles per failure
  std::chrono::milliseconds reconnect_max{32000};
  std::filesystem::path work_root; ///< parent of the per-job temp dirs; empty = $TMPDIR or /tmp
  bool keep_temp = false;          ///< keep each job's directory (for debugging compiles)
  /// ZMQ_MAXMSGSIZE for incoming messages; also caps what a reply may carry (docs/protocol.md).
  std::size_t max_message_bytes = 256u << 20;
  /// CURVE keys for an engine endpoint that requires them (--curve-keys, --server-key).
  std::optional<curve_client_keys> curve;
  bool once = false; ///< leave when the first engine served ends (worker_session_options::once)
  /// Jobs compiled at once (--slots); 0: one per usable core (host_resources.hpp). The engine's own
  /// local workers run one each.
  std::size_t slots = 0;
  /// Files and folders besides the job folder that a job's read-only paths (-I, -isystem, -L,
  /// -include, inputs) may name (--allow-path; workers/compilers/argv_check.hpp).
  std::vector<std::filesystem::path> allowed_paths;
  sandbox_mode sandbox = sandbox_mode::if_available;
  /// Hidden from sandboxed compilers besides home folders (the --curve-keys folder).
  std::vector<std::filesystem::path> private_paths;
};

/// True when the file name of `argv0` is the file name of one of `allowed` (the engine's check of a
/// build template; a worker also checks which file a path is: compiler_choice.hpp). Shells and
/// launchers (sh, bash, env) are never allowed, whatever the list says, because they would run
/// arbitrary commands.
bool compiler_allowed(const std::string& argv0, const std::vector<std::string>& allowed);

/// Runs the worker until `stop_requested` becomes true (checked at least every 100 ms), then sends
/// DISCONNECT and returns the process exit code (0). Throws std::invalid_argument for bad options,
/// and with sandbox_mode::required when this host cannot sandbox compilers (the message names the
/// fix).
int run_compile_worker(const compile_worker_options& options, std::atomic<bool>& stop_requested);

} // namespace rpl::workers
