#pragma once
/// How many candidates are in the graph, shared by the planner room (a candidate leaves), run()
/// (it waits for none to be left) and the stop watcher.

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace rpl::engine::nodes {

struct graph_occupancy {
  /// A candidate went through the planner node and no new one took its place.
  void left_one() {
    bool idle = false;
    {
      const std::lock_guard lock(mutex);
      idle = --in_graph == 0;
    }
    if (idle) {
      changed.notify_all();
    }
  }

  std::mutex mutex;
  std::condition_variable changed;
  /// run() is done: the graph's wait has returned.
  bool finished = false;
  /// Candidates put into the graph that have not left it through the planner node.
  std::size_t in_graph = 0;
  /// run()'s bound on in_graph (a refilling policy's planner tops up to it).
  std::size_t max_in_flight = 1;
  /// The stop watcher has dropped or abandoned what it could: the graph's wait can end.
  bool stop_settled = false;
};

} // namespace rpl::engine::nodes
