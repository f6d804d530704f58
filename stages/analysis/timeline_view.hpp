#pragma once
/// A traced timeline as the Perfetto trace and the HTML page draw it: one op per kernel or copy
/// with its device, stream, critical-path flag and slack, and the stream waits as flows.

#include <vector>

#include "stages/analysis/perfetto_trace.hpp"
#include "stages/analysis/timeline_dag.hpp"

namespace rpl::stages::analysis {

/// Every op of `timeline`, in its order; the track "GPU 0 (sm_90) / Stream 7" gives the device
/// and the stream.
std::vector<timeline_op> timeline_ops(const rocpd::timeline& timeline,
                                      const critical_path_result& path);

/// The path's stream waits (cross_edges) as flows between ops.
std::vector<timeline_flow> timeline_flows(const critical_path_result& path);

} // namespace rpl::stages::analysis
