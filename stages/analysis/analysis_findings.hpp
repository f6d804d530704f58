#pragma once
/// What each analysis found, joined by kernel name into the sources of the application's analysis
/// (analysis_builder.hpp): the critical path, the streams' idle time, the roofline and AMD thread
/// traces. Notes are appended in the order the joins run.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "stages/analysis/analysis_builder.hpp"
#include "stages/analysis/roofline_report.hpp"
#include "stages/analysis/timeline_dag.hpp"
#include "stages/trace/counter_values.hpp"
#include "stages/trace/thread_trace.hpp"

namespace rpl::stages::analysis {

/// The path's times and notes, and each kernel's critical-path time, slack and what-if savings.
void add_critical_path(const critical_path_result& path, analysis_sources& sources);

/// Each kernel's median idle time before its dispatches (stream_idle.hpp).
void add_stream_idle(const std::map<std::string, double>& idle_ns, analysis_sources& sources);

/// Each report kernel's roofline (or why there is none), its compute and memory percentages and
/// its stalls; the roofline's notes.
void add_roofline(const roofline_report& roofline, analysis_sources& sources);

/// Each report kernel's global-access figures (memory_access.hpp) from the counter passes, matched
/// by kernel_key; kernels without such counters keep none.
void add_memory_access(const profile_report& report,
                       const std::map<std::string, rocpd::kernel_counters>& counters,
                       analysis_sources& sources);

/// Each thread-traced kernel's stall summary, matched to the report's kernels by kernel_key of
/// the demangled name or the symbol; its dominant stall stands in for the warp stalls where
/// Nsight Compute gave none. `files`: how many trace files were read, for the note.
void add_thread_traces(const profile_report& report,
                       const std::vector<att::stall_summary>& traced,
                       std::size_t files,
                       analysis_sources& sources);

} // namespace rpl::stages::analysis
