#pragma once
/// The critical path of a GPU timeline: a DAG of kernel dispatches and copies, its longest path,
/// each op's slack, and what making one kernel faster would save, all in O(N + E) per pass.
///
/// Edges. Same-stream order: each op depends on the previous op of its stream. Cross-stream: a
/// recorded stream wait (the CUPTI tracer's synchronization record names the waiting stream) makes
/// the first op its stream starts after the wait call depend on the op of another stream of the
/// same process that ended last before that op started (the event it waited for completed then).
/// Host-blocking synchronizations (stream, device and event synchronize) cut a process's timeline
/// into segments at the call's end: nothing crosses a cut, and the segments' paths add up.
///
/// Path. An op starts when its last predecessor ends, or later (a launch that came late): walking
/// back from the op that ends last, each op's predecessor on the path is the one that ended last;
/// the gap before an op is idle time on the path. A segment's path length is its span from the
/// path's first start to its last end; its composition is the ops' durations plus those gaps.
///
/// Slack: how long an op could end later without moving its segment's end, with successors
/// allowed to start right after it (a backward pass with zero-weight edges). What-if: durations of
/// one kernel scaled by (1 - k %), every gap kept as a fixed delay after the predecessor that
/// precedes it, the segments replayed forward; the saving is the old span minus the new.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stages/trace/rocpd_timeline.hpp"

namespace rpl::stages::analysis {

enum class dag_edge_kind : std::uint8_t { stream_order, stream_wait };

struct dag_edge {
  std::uint32_t from = 0; ///< op index
  std::uint32_t to = 0;
  dag_edge_kind kind = dag_edge_kind::stream_order;
  /// A wait edge from the recording stream of the event waited for (true), or by timing from the
  /// op of another stream that ended last before the waiter (false).
  bool from_event_record = false;
};

struct kernel_path_time {
  std::string name;
  double critical_path_ns = 0; ///< its ops' durations on the path
  double total_ns = 0;         ///< all its ops' durations
  double min_slack_ns = 0;
  std::size_t on_path = 0; ///< how many of its ops are on the path
  /// (faster %, end-to-end saving in ns), for the kernels critical_path was asked about.
  std::vector<std::pair<double, double>> what_if;
};

struct critical_path_result {
  double path_ns = 0;     ///< the segments' path spans, summed
  double busy_ns = 0;     ///< of which ops' durations (the rest is idle on the path)
  double makespan_ns = 0; ///< first op start to last op end, over everything
  std::size_t segments = 0;
  std::vector<std::string> notes;        ///< which edges came from what, and the assumptions
  std::vector<std::uint8_t> on_path;     ///< per op of the timeline
  std::vector<double> slack_ns;          ///< per op
  std::vector<dag_edge> cross_edges;     ///< stream waits (stream-order edges are implied)
  std::vector<kernel_path_time> kernels; ///< per op name, by critical-path time descending
};

/// Builds the DAG of `t` and finds its critical path; with `what_if_top` > 0, also the what-if
/// savings at each of `percents` for that many kernels with the most critical-path time (on the
/// same DAG: one replay per question).
critical_path_result critical_path(const rocpd::timeline& t,
                                   std::size_t what_if_top = 0,
                                   const std::vector<double>& percents = {});

/// The end-to-end saving (ns) if every op named `name` were `faster_pct` % shorter.
double what_if_saving(const rocpd::timeline& t, const std::string& name, double faster_pct);

/// The same for several kernels and percentages, building the DAG once: result[k][p] is the
/// saving of names[k] at percents[p].
std::vector<std::vector<double>> what_if_savings(const rocpd::timeline& t,
                                                 const std::vector<std::string>& names,
                                                 const std::vector<double>& percents);

/// Paired: result[k] is the saving if every op named names[k] were percents[k] % shorter (one DAG
/// and one replay per kernel; compare asks each changed kernel about its own change). A name the
/// timeline lacks saves 0.
std::vector<double> what_if_each(const rocpd::timeline& t,
                                 const std::vector<std::string>& names,
                                 const std::vector<double>& percents);

/// dag.json: {"schema_version", "notes", "path_ns", "busy_ns", "makespan_ns", "segments",
/// "tracks", "kernels", "edges" (the stream waits), "critical_ops" (at most `max_ops` of them, in
/// time order: name, track, start_ns, end_ns)}. Not every op is listed: a million-op DAG's nodes
/// are the trace itself.
nlohmann::json
to_json(const rocpd::timeline& t, const critical_path_result& r, std::size_t max_ops = 10000);

} // namespace rpl::stages::analysis
