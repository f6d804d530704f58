#include "engine/graph/nodes/compile_body.hpp"

#include <exception>
#include <string>
#include <utility>

namespace rpl::engine::nodes {

compile_body::compile_body(tuning_policy& policy,
                           compile_service& compiler,
                           work_ptr work,
                           screen_body screen)
    : policy_(&policy), compiler_(&compiler), work_(std::move(work)), screen_(std::move(screen)) {}

void compile_body::operator()(const candidate_ptr& c, gateway& gw) const {
  if (c->refused_before_compile.empty()) {
    try {
      if (auto refusal = policy_->before_compile(*c)) {
        c->refused_before_compile = std::move(*refusal);
      }
    } catch (const std::exception& error) {
      c->refused_before_compile =
          std::string("the checks before the build failed: ") + error.what();
    }
  }
  if (!c->refused_before_compile.empty()) {
    screen_body::skip_lanes(c, c->refused_before_compile, gw);
    return;
  }
  const auto id = work_->open(outstanding_work::stage::compile, c, gw);
  if (!id) {
    return;
  }
  try {
    compiler_->submit_storing(std::move(c->compile_request),
                              [policy = policy_, c, work = work_, id = *id,
                               screen = screen_](const messages::compile_reply& reply,
                                                 const artifact_store::stored* stored) {
                                auto* taken = work->take(id);
                                if (taken == nullptr) {
                                  return;
                                }
                                if (!policy->stopping()) {
                                  screen(c, reply, stored, *taken);
                                }
                                taken->release_wait();
                              });
  } catch (const std::exception& error) {
    if (auto* taken = work_->take(*id)) {
      c->compile.status = messages::compile_status::internal_error;
      c->compile.error = std::string("cannot submit the compile job: ") + error.what();
      screen_body::skip_lanes(c, policy_->build_failure(*c), *taken);
      taken->release_wait();
    }
  }
}

} // namespace rpl::engine::nodes
