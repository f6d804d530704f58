#pragma once
/// The tuning flow graph (oneTBB), with every edge explicit:
///
///   compile gateway ─▶ lane router ─┬─▶ lane dispatch ─▶ model ─▶ acceptance ─▶ store ─▶ feedback
///   (async_node)       (serial)     └──(build failed)──▶ model                            │
///        ▲                                                                                 │
///        └────────────────────────── next candidate ───────────────────────────────────────┘
///
/// Slow work (compiles, measurements) enters only through async_nodes, so no TBB worker thread
/// blocks on a process or a socket. The graph is seeded with at most `max_in_flight` candidates and
/// the feedback node starts one new candidate per finished one, which bounds the work in flight.

#include <cstddef>
#include <memory>
#include <vector>

#include "engine/graph/compile_service.hpp"
#include "engine/graph/lane_worker.hpp"
#include "engine/graph/tuning_policy.hpp"

namespace rpl::engine {

class tuning_graph {
public:
  /// The lanes must outlive the graph; the least-loaded lane gets each compiled candidate.
  tuning_graph(tuning_policy& policy,
               compile_service& compiler,
               const std::vector<std::unique_ptr<lane_worker>>& lanes);
  ~tuning_graph();
  tuning_graph(const tuning_graph&) = delete;
  tuning_graph& operator=(const tuning_graph&) = delete;

  /// Seeds the graph with up to `max_in_flight` candidates from the policy and returns when every
  /// candidate has been recorded and no new one starts.
  void run(std::size_t max_in_flight);

private:
  struct nodes;
  std::unique_ptr<nodes> nodes_;
};

} // namespace rpl::engine
