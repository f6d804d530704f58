#pragma once
/// One candidate as the results store writes it: plain data, so any verb (autotune today, optimize
/// and replay later) can store results without knowing the flow graph's record.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/wire.hpp"
#include "stages/statistics/statistics.hpp"

namespace rpl::engine {

struct candidate_record {
  std::string key;
  std::size_t space_index = 0;
  nlohmann::json params = nlohmann::json::object(); ///< parameter name -> value
  std::vector<std::string> build_argv;              ///< {OUT} left for the worker to fill in
  std::vector<std::string> run_argv;                ///< {BIN} left for the lane to fill in
  messages::compile_reply compile; ///< artifact bytes are dropped once written to disk
  std::string artifact_hash;       ///< empty when the compile produced no artifact
  std::filesystem::path artifact_path;
  messages::measure_result measure;
  stages::sample_stats stats;
  messages::verdict verdict;
  /// The static screen's findings (engine/autotune/candidate_screen.hpp); null when not screened.
  nlohmann::json screen;
};

} // namespace rpl::engine
