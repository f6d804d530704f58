#pragma once
/// The lane room: a built candidate that passed the screen waits on the least-loaded lane for its
/// measurement, which re-enters the graph through the compile gateway.

#include <memory>
#include <mutex>
#include <vector>

#include "engine/graph/lane_worker.hpp"
#include "engine/graph/nodes/outstanding_work.hpp"

namespace rpl::engine::nodes {

class lane_router {
public:
  /// The lanes must outlive the graph.
  lane_router(const std::vector<std::unique_ptr<lane_worker>>& lanes, work_ptr work);

  /// Queues `c`'s measure request on the least-loaded lane; the measured candidate leaves through
  /// `gw`. Called on the compile service's thread, one reply at a time (the mutex also covers a
  /// reply from another thread), so loads are read and updated one candidate at a time. A stopping
  /// graph drops `c` here, before a lane takes it.
  void operator()(const candidate_ptr& c, gateway& gw) const;

private:
  const std::vector<std::unique_ptr<lane_worker>>* lanes_;
  work_ptr work_;
  std::shared_ptr<std::mutex> mutex_ = std::make_shared<std::mutex>();
};

} // namespace rpl::engine::nodes
