#include "engine/graph/nodes/lane_router.hpp"

namespace rpl::engine::nodes {

lane_router::lane_router(const std::vector<std::unique_ptr<lane_worker>>& lanes, work_ptr work)
    : lanes_(&lanes), work_(std::move(work)) {}

void lane_router::operator()(const candidate_ptr& c, gateway& gw) const {
  const std::lock_guard lock(*mutex_);
  const auto& lanes = *lanes_;
  std::size_t chosen = 0;
  for (std::size_t i = 1; i < lanes.size(); ++i) {
    if (lanes[i]->outstanding() < lanes[chosen]->outstanding()) {
      chosen = i;
    }
  }
  const auto id = work_->open(outstanding_work::stage::measure, c, gw);
  if (!id) {
    return; // stopping: dropped before a lane took it
  }
  lanes[chosen]->push(c, c->measure_request, [work = work_, id = *id](const candidate_ptr& done) {
    if (auto* taken = work->take(id)) {
      taken->try_put(done);
      taken->release_wait();
    }
  });
}

} // namespace rpl::engine::nodes
