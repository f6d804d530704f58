#pragma once
/// One candidate as it travels through the flow graph: each node fills in its part of the record,
/// and the store node writes the record in one transaction once the verdict is final.

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "engine/store/candidate_record.hpp"
#include "stages/search/param_value.hpp"

namespace rpl::engine {

struct candidate_state : candidate_record {
  stages::configuration config;
  /// The kernel lane's launch for this configuration (--launch), or why it could not be resolved.
  std::optional<messages::kernel_launch> launch;
  std::string launch_error;
  /// The static screen's features for the model strategy (stages::static_feature_names), when it
  /// screened this candidate.
  std::optional<std::array<double, 4>> static_features;
  std::chrono::steady_clock::time_point submitted_at;
};

using candidate_ptr = std::shared_ptr<candidate_state>;

} // namespace rpl::engine
