#pragma once
/// How the tracer keeps a trace when its process dies: a checkpoint thread that calls a hook every
/// `period` (the tracer flushes CUPTI and rewrites its database there), and handlers for fatal
/// signals that ask that thread for a last write, wait for it (bounded), then hand the signal on.
/// No CUDA here, so it is unit-tested without a GPU
/// (tests/unit/workers_cupti_checkpoints_test.cpp).
///
/// Async-signal-safety: a signal handler only does what POSIX allows there (write and poll on
/// pipes, clock_gettime, sigaction, raise, getpid, pthread_self). The write itself, which needs
/// malloc, SQLite and CUPTI, runs on the checkpoint thread, an ordinary thread. What stays unsafe
/// is what that thread may need from the dying one: a lock it held when it crashed (the heap's, the
/// driver's, the tracer's own). Then the handler stops waiting after `signal_wait` and the signal
/// goes on; the file on disk is still the last whole checkpoint, because every write goes to a
/// temporary file that is renamed over the database only once complete.

#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

namespace rpl::workers::cupti_tracer {

struct checkpoint_settings {
  /// Between two periodic checkpoints; 0: none (fatal signals are still handled). The next one
  /// waits at least 4 times as long as the last took, so a slow one costs at most ~20% of a core.
  std::chrono::milliseconds period{500};
  /// How long a fatal signal's handler waits for the last write before handing the signal on.
  std::chrono::milliseconds signal_wait{3000};
  /// The signals to handle. A signal the process ignores (SIG_IGN) when the handlers are installed
  /// is left alone.
  std::vector<int> signals{SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT};
};

struct checkpoint_hooks {
  /// A periodic checkpoint, on the checkpoint thread.
  std::function<void()> periodic;
  /// The last write for `signal`, on the checkpoint thread, while the signalled thread waits.
  /// `fatal`: the signal's previous action is the default one, so the process is about to die
  /// (otherwise the program's own handler runs next and may carry on).
  std::function<void(int signal, bool fatal)> on_signal;
};

/// Starts the checkpoint thread and installs the signal handlers; one at a time per process.
/// Returns false, with `error` saying why, when a pipe or the thread cannot be made or it is
/// already running; nothing is left installed then.
bool start_checkpoints(const checkpoint_settings& settings,
                       checkpoint_hooks hooks,
                       std::string& error);

/// Stops the checkpoint thread, waiting up to `wait` for a checkpoint in progress. The signal
/// handlers stay (without the thread they only hand signals on). False when the thread did not
/// stop in time; it is then left running, and may still be writing.
bool stop_checkpoints(std::chrono::milliseconds wait);

/// Restores the signal actions the handlers replaced (tests; the tracer keeps its handlers).
void remove_signal_handlers();

/// Whether `signal` has our handler now.
bool handles_signal(int signal);

} // namespace rpl::workers::cupti_tracer
