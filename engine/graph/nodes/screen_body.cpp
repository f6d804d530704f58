#include "engine/graph/nodes/screen_body.hpp"

#include <utility>

namespace rpl::engine::nodes {

screen_body::screen_body(tuning_policy& policy, lane_router lanes)
    : policy_(&policy), lanes_(std::move(lanes)) {}

void screen_body::operator()(const candidate_ptr& c,
                             const messages::compile_reply& reply,
                             const artifact_store::stored* stored,
                             gateway& gw) const {
  if (stored != nullptr) {
    c->stored_by_service = *stored;
  }
  policy_->on_compiled(*c, reply);
  if (c->compile.status != messages::compile_status::ok) {
    // A failed build skips the lanes: its measurement is `not_run` with the reason.
    skip_lanes(c, policy_->build_failure(*c), gw);
    return;
  }
  if (auto refusal = policy_->screen(*c)) {
    // The device would refuse the launch: no lane time, like a failed build.
    skip_lanes(c, std::move(*refusal), gw);
    return;
  }
  lanes_(c, gw);
}

void screen_body::skip_lanes(const candidate_ptr& c, std::string reason, gateway& gw) {
  c->measure.status = messages::measure_status::not_run;
  c->measure.reason = std::move(reason);
  gw.try_put(c);
}

} // namespace rpl::engine::nodes
