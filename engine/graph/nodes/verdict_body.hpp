#pragma once
/// The verdict room: the policy judges a candidate against the incumbent (serial). An exception
/// from the policy makes the verdict invalid; nothing throws out of the node.

#include "engine/graph/tuning_policy.hpp"

namespace rpl::engine::nodes {

class verdict_body {
public:
  explicit verdict_body(tuning_policy& policy) : policy_(&policy) {}
  candidate_ptr operator()(const candidate_ptr& c) const;

private:
  tuning_policy* policy_;
};

} // namespace rpl::engine::nodes
