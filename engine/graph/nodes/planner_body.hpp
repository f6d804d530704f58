#pragma once
/// The planner room (the feedback node, serial): the strategy observes each finished candidate and
/// plans the next one, which goes back to the compile room; the finished one goes on to the store
/// room. It is also where a held-back replacement starts once a write is done.

#include "engine/graph/nodes/graph_occupancy.hpp"
#include "engine/graph/nodes/node_types.hpp"
#include "engine/graph/nodes/store_backlog.hpp"
#include "engine/graph/tuning_policy.hpp"

namespace rpl::engine::nodes {

class planner_body {
public:
  planner_body(tuning_policy& policy, store_backlog& backlog, graph_occupancy& occupancy);

  /// `c` finished; a null `c` comes from the store room: a write is done, start the replacement
  /// held back for it.
  void operator()(const candidate_ptr& c, planner_node::output_ports_type& ports) const;

private:
  /// The policy's next candidate, or nullptr when the search is done (or the strategy failed).
  candidate_ptr next_candidate() const;
  /// Starts `next` in the place of a finished candidate, or says that none took its place.
  void start_or_leave(const candidate_ptr& next, planner_node::output_ports_type& ports) const;
  /// For a policy that refills (tuning_policy::refills): more candidates until the graph holds
  /// graph_occupancy::max_in_flight or the policy has none now.
  void top_up(planner_node::output_ports_type& ports) const;

  tuning_policy* policy_;
  store_backlog* backlog_;
  graph_occupancy* occupancy_;
};

} // namespace rpl::engine::nodes
