#include "engine/graph/nodes/planner_body.hpp"

#include <exception>

#include <spdlog/spdlog.h>

namespace rpl::engine::nodes {

planner_body::planner_body(tuning_policy& policy,
                           store_backlog& backlog,
                           graph_occupancy& occupancy)
    : policy_(&policy), backlog_(&backlog), occupancy_(&occupancy) {}

void planner_body::operator()(const candidate_ptr& c,
                              planner_node::output_ports_type& ports) const {
  if (!c) {
    const candidate_ptr next = next_candidate();
    start_or_leave(next, ports);
    if (next) {
      top_up(ports);
    }
    return;
  }
  // The strategy sees every result; one new candidate starts per finished one (now, or once a
  // write is done, see below).
  bool observed = true;
  try {
    policy_->observe(*c);
  } catch (const std::exception& error) {
    spdlog::error("strategy: {}", error.what());
    observed = false; // as when the search is done: nothing replaces it
  }
  // Every candidate that gets here is stored. Its replacement starts before that write, so that
  // the SQLite commit overlaps the next compile instead of delaying it; but only while no other
  // finished candidate waits for its write. Otherwise the replacement waits for a write to be
  // done, so at most one finished candidate is ever unstored beyond the work in flight.
  const bool owed = backlog_->finished(observed);
  const candidate_ptr next = observed && !owed ? next_candidate() : nullptr;
  // The next candidate is put last: a thread runs the task it spawned last first, so its compile
  // is submitted before this write starts.
  std::get<1>(ports).try_put(c);
  if (!owed) {
    start_or_leave(next, ports);
    if (next) {
      top_up(ports);
    }
  }
}

void planner_body::top_up(planner_node::output_ports_type& ports) const {
  if (!policy_->refills()) {
    return;
  }
  // Only while something is in flight (the replacement just started): a policy's nullptr with
  // nothing in flight ends the run, and that decision stays start_or_leave's.
  while (true) {
    {
      const std::lock_guard lock(occupancy_->mutex);
      if (occupancy_->in_graph >= occupancy_->max_in_flight) {
        return;
      }
    }
    candidate_ptr more = next_candidate();
    if (!more) {
      return;
    }
    {
      const std::lock_guard lock(occupancy_->mutex);
      ++occupancy_->in_graph;
    }
    std::get<0>(ports).try_put(more);
  }
}

candidate_ptr planner_body::next_candidate() const {
  try {
    return policy_->next_candidate();
  } catch (const std::exception& error) {
    spdlog::error("strategy: {}", error.what());
    return nullptr;
  }
}

void planner_body::start_or_leave(const candidate_ptr& next,
                                  planner_node::output_ports_type& ports) const {
  if (next) {
    std::get<0>(ports).try_put(next); // replaces the finished one: as many in the graph
  } else {
    occupancy_->left_one();
  }
}

} // namespace rpl::engine::nodes
