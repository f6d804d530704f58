#pragma once
/// One wording for how a process ended, shared by everything that reports on a child (the compile
/// worker, the timing lane, the engine's worker supervisor, profile): the caller names the subject
/// ("g++", "run 2", "local compile worker 4711") and these functions give the rest of the sentence.

#include <chrono>
#include <optional>
#include <string>

namespace rpl::workers {

struct child_outcome;

/// "SIGSEGV (Segmentation fault)"; "signal 77" for numbers the C library does not know.
std::string describe_signal(int sig);

/// How `outcome` ended, as a predicate: "exited with status 3", "was killed by SIGSEGV
/// (Segmentation fault)", "timed out" ("timed out after 150 ms" / "after 1.5 s" when `timeout` is
/// given), or "could not be started: execvp foo: No such file or directory". A child that exited
/// with status 0 reads "exited with status 0".
std::string describe_exit(const child_outcome& outcome,
                          std::optional<std::chrono::milliseconds> timeout = std::nullopt);

/// The same wording for a raw waitpid() status: "exited with status 3", "was killed by SIGTERM
/// (Terminated)"; "stopped by ..." for a stopped child, "ended with wait status N" otherwise.
std::string describe_wait_status(int status);

/// A timeout as people read it: "150 ms" below one second, else "1.5 s" (one decimal).
std::string describe_timeout(std::chrono::milliseconds timeout);

} // namespace rpl::workers
