#pragma once
/// One candidate as it travels through the flow graph: each stage fills in its part, and the results
/// store writes the whole record in one transaction once the verdict is final.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "messages/wire.hpp"
#include "stages/search/space.hpp"
#include "stages/statistics/statistics.hpp"

namespace rpl::engine {

struct candidate_state {
  std::size_t space_index = 0;
  std::string key;
  stages::configuration config;
  std::vector<std::string> build_argv;  ///< {OUT} left for the worker to fill in
  std::vector<std::string> run_argv;    ///< {BIN} left for the lane to fill in
  messages::compile_reply compile;      ///< artifact bytes are dropped once written to disk
  std::string artifact_hash;
  std::filesystem::path artifact_path;
  messages::measure_result measure;
  stages::sample_stats stats;
  messages::verdict verdict;
  std::chrono::steady_clock::time_point submitted_at;
};

using candidate_ptr = std::shared_ptr<candidate_state>;

}  // namespace rpl::engine
