#pragma once
/// One candidate as it travels through the flow graph: each node fills in its part of the record,
/// and the store node writes the record in one transaction once the verdict is final. Its compile
/// and measure requests are built once, by the planner (tuning_policy::next_candidate).

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/store/artifact_store.hpp"
#include "engine/store/candidate_record.hpp"
#include "stages/search/param_value.hpp"

namespace rpl::workers {
class lane_backend;
}

namespace rpl::engine {

struct candidate_state : candidate_record {
  stages::configuration config;
  /// The compile job, built by the planner; the compile room hands it (moved) to the service.
  messages::compile_request compile_request;
  /// The measurement job, built by the planner; its `{BIN}` becomes the artifact's path once the
  /// artifact is stored (tuning_policy::on_compiled).
  messages::measure_request measure_request;
  /// Where the compile service stored the artifact already (the artifact cache does), so that the
  /// policy does not store it again; nullopt when the service stored nothing.
  std::optional<artifact_store::stored> stored_by_service;
  /// The kernel lane's launch for this configuration (--launch), or why it could not be resolved.
  std::optional<messages::kernel_launch> launch;
  std::string launch_error;
  /// The static screen's features for the model strategy (stages::static_feature_names), when it
  /// screened this candidate.
  std::optional<std::array<double, 4>> static_features;
  std::chrono::steady_clock::time_point submitted_at;
  /// 1, 2, 3, ... in the order the strategy proposed the candidates (0: not proposed, e.g. a
  /// final-round measurement). A lane measures what it holds in this order, whatever order the
  /// builds finished in, so an order the strategy chose (stages/search/prior_order.hpp) holds.
  std::uint64_t sequence = 0;
  /// Set by the planner when a check before the compile gateway refused the candidate (optimize's
  /// source guards): it then skips the compile and the lanes (`not_run`, this reason) and goes on
  /// to the verdict and the store like any other.
  std::string refused_before_compile;
  /// A lane job that needs the lane for more than one measurement (optimize: the validation
  /// cases, then the paired rounds against the incumbent), run on the lane's thread in place of
  /// measuring `measure_request` once; its result becomes `measure`. Empty for autotune.
  std::function<messages::measure_result(workers::lane_backend&)> lane_job;
  /// Whether the lane may take this candidate now (optimize: only once every candidate proposed
  /// before it has its verdict, so that each is compared with the incumbent as those left it);
  /// empty: whenever the lane is free. Called under the lane's lock: must be cheap.
  std::function<bool()> lane_turn;
};

using candidate_ptr = std::shared_ptr<candidate_state>;

} // namespace rpl::engine
