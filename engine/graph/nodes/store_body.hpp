#pragma once
/// The store room (serial): the policy writes the finished candidate; when a replacement waited
/// for this write, a null candidate tells the planner room to start it now.

#include "engine/graph/nodes/node_types.hpp"
#include "engine/graph/nodes/store_backlog.hpp"
#include "engine/graph/tuning_policy.hpp"

namespace rpl::engine::nodes {

class store_body {
public:
  store_body(tuning_policy& policy, store_backlog& backlog)
      : policy_(&policy), backlog_(&backlog) {}
  void operator()(const candidate_ptr& c, store_node::output_ports_type& ports) const;

private:
  tuning_policy* policy_;
  store_backlog* backlog_;
};

} // namespace rpl::engine::nodes
