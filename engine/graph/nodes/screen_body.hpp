#pragma once
/// The screen room, on the compile service's thread: the compile reply goes into the candidate
/// (the policy stores the artifact), then the static screen decides whether it may use a lane.

#include <string>

#include "engine/graph/nodes/lane_router.hpp"
#include "engine/graph/tuning_policy.hpp"

namespace rpl::engine::nodes {

class screen_body {
public:
  screen_body(tuning_policy& policy, lane_router lanes);

  /// A built candidate the screen lets through goes to the lane room (and holds the gateway's wait
  /// again until measured); a failed build or a refused launch skips the lanes. `stored`: where
  /// the compile service stored the artifact, or nullptr.
  void operator()(const candidate_ptr& c,
                  const messages::compile_reply& reply,
                  const artifact_store::stored* stored,
                  gateway& gw) const;

  /// `c` skips the lanes: its measurement is `not_run` for `reason`, and it re-enters the graph
  /// at once through `gw`.
  static void skip_lanes(const candidate_ptr& c, std::string reason, gateway& gw);

private:
  tuning_policy* policy_;
  lane_router lanes_;
};

} // namespace rpl::engine::nodes
