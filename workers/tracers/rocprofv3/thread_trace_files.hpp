#pragma once
/// The thread-trace statistics rocprofv3 --att leaves on disk (stats_*.csv beside each
/// ui_output_agent_*_dispatch_* folder, code.json inside it), read into stall summaries per kernel
/// (stages/trace/thread_trace.hpp). `analyze --thread-trace PATH` and `profile --thread-trace
/// PATH` take them.

#include <filesystem>
#include <string>
#include <vector>

#include "stages/trace/thread_trace.hpp"

namespace rpl::workers::tracers {

struct thread_trace_files {
  std::vector<std::filesystem::path> files; ///< what was read, in order
  std::vector<stages::att::stall_summary> kernels;
};

/// Reads each path: a stats_*.csv or a code.json file, or a folder searched recursively for
/// stats_*.csv (else, when it has none, for code.json: the two hold the same figures, so only one
/// kind is read from a folder). Throws stages::att::thread_trace_error naming the path for one
/// that is missing, unreadable, malformed, or a folder without either file.
thread_trace_files read_thread_traces(const std::vector<std::filesystem::path>& paths);

} // namespace rpl::workers::tracers
