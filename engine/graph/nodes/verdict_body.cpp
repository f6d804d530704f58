#include "engine/graph/nodes/verdict_body.hpp"

#include <exception>
#include <string>

namespace rpl::engine::nodes {

candidate_ptr verdict_body::operator()(const candidate_ptr& c) const {
  try {
    policy_->judge(*c);
  } catch (const std::exception& error) {
    c->verdict.decision = messages::verdict_kind::invalid;
    c->verdict.reason = std::string("acceptance error: ") + error.what();
  }
  return c;
}

} // namespace rpl::engine::nodes
