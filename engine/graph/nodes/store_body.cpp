#include "engine/graph/nodes/store_body.hpp"

namespace rpl::engine::nodes {

void store_body::operator()(const candidate_ptr& c, store_node::output_ports_type& ports) const {
  policy_->record(*c);
  if (backlog_->written()) {
    std::get<0>(ports).try_put(nullptr); // the planner node starts the held-back replacement
  }
}

} // namespace rpl::engine::nodes
