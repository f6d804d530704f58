#pragma once
/// Internal to workers/tracers/: what every recorder does around its child process.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "workers/process/child_process.hpp"

namespace rpl::workers::tracers_detail {

/// Runs `child` to completion with its output captured (the first MiB) and killed at `timeout`;
/// with `echo`, copies the output to stderr under "--- `title` ---".
child_outcome run_recorded_child(child_options child,
                                 std::chrono::milliseconds timeout,
                                 bool echo,
                                 const std::string& title);

/// How a failed child ended: "exited with status 3", "was killed by SIGSEGV (...)", "timed out",
/// or the launch error itself ("execvp foo: No such file or directory").
std::string describe_failure(const child_outcome& outcome);

/// The last 2000 characters of the child's output.
std::string output_tail(const child_outcome& outcome);

/// The argv as one line, words joined by spaces.
std::string join_argv(const std::vector<std::string>& argv);

/// The *.db files under `folder`, recursively, sorted; none when it is missing.
std::vector<std::filesystem::path> find_databases(const std::filesystem::path& folder);

} // namespace rpl::workers::tracers_detail
