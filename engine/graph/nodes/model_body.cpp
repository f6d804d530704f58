#include "engine/graph/nodes/model_body.hpp"

#include "stages/statistics/statistics.hpp"

namespace rpl::engine::nodes {

candidate_ptr model_body::operator()(const candidate_ptr& c) const {
  c->stats = stages::summarize(c->measure.samples_ns);
  return c;
}

} // namespace rpl::engine::nodes
