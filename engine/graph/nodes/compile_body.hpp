#pragma once
/// The compile room: the compile gateway's body. A candidate's way through the slow services
/// starts here: its compile request goes to the compile service, and the reply goes to the screen
/// room on the service's own thread, not through a graph task: one thread hand-off fewer per
/// candidate, and no TBB worker spinning beside a measurement that is just starting.

#include "engine/graph/compile_service.hpp"
#include "engine/graph/nodes/screen_body.hpp"

namespace rpl::engine::nodes {

class compile_body {
public:
  compile_body(tuning_policy& policy, compile_service& compiler, work_ptr work, screen_body screen);

  /// Hands `c`'s compile request (moved: it is sent once) to the service; `c` re-enters the graph
  /// through `gw` once measured, or at once when it is not to be measured. A request the service
  /// cannot queue is an internal_error build. After a stop a reply goes no further: a worker_lost
  /// for a dropped queue is no result, and nothing new starts on a lane.
  void operator()(const candidate_ptr& c, gateway& gw) const;

private:
  tuning_policy* policy_;
  compile_service* compiler_;
  work_ptr work_;
  screen_body screen_;
};

} // namespace rpl::engine::nodes
