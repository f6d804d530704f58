#pragma once
/// The model room: the statistics of a candidate's samples (any thread, unlimited).

#include "engine/graph/candidate_state.hpp"

namespace rpl::engine::nodes {

class model_body {
public:
  candidate_ptr operator()(const candidate_ptr& c) const;
};

} // namespace rpl::engine::nodes
