#pragma once
/// The tuning flow graph (oneTBB): one candidate crosses each room once, and every edge is
/// explicit (the rooms are named bodies in engine/graph/nodes/):
///
///   planner ─▶ [compile ─▶ screen ─▶ lane] ─▶ model ─▶ verdict ─▶ planner ─▶ store
///      ▲        compile gateway (async_node)                          │          │
///      └─────────────────────── next candidate ───────────────────────┘          │
///      └────────────── a write is done: start the held-back replacement ─────────┘
///
/// A failed build, or a launch the screen refuses, skips the lane room (`not_run`, its reason).
///
/// Slow work (compiles, measurements) enters only through async_nodes, so no TBB worker thread
/// blocks on a process or a socket. The graph is seeded with at most `max_in_flight` candidates and
/// the planner node starts one new candidate per finished one, which bounds the work in flight.
/// It starts it before the finished one is stored, so the store's write overlaps the next compile
/// rather than delaying it, unless another finished candidate still waits for its write (then the
/// replacement starts once a write is done): at most one candidate beyond `max_in_flight` is
/// unstored at any time. Every candidate that reaches the planner node is stored, and run()
/// returns only after the last write.
///
/// Stopping (tuning_policy::stopping()) is bounded: candidates waiting for a compile reply or for a
/// lane are dropped at once (not recorded, so a resumed run makes them again), measurements already
/// running get `stop_grace` to finish (and are recorded), and the rest are abandoned.

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "engine/graph/compile_service.hpp"
#include "engine/graph/lane_worker.hpp"
#include "engine/graph/tuning_policy.hpp"

namespace rpl::engine {

/// How long a stopping graph waits for the measurements already running on its lanes.
inline constexpr std::chrono::milliseconds default_stop_grace{10000};

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
  /// candidate has been recorded and no new one starts, or, once the policy is stopping, at most
  /// `stop_grace` (plus a poll of 50 ms) after the stop: what is left then is abandoned.
  void run(std::size_t max_in_flight, std::chrono::milliseconds stop_grace = default_stop_grace);

private:
  struct network;
  std::unique_ptr<network> network_;
};

} // namespace rpl::engine
