#pragma once
/// The honest winner: the sweep's finalists (stages/search/finalists.hpp) are re-measured
/// interleaved on one lane, round after round (A B C, B C A, ...: the order rotates so that no
/// finalist always runs first), and a paired comparison of the rounds decides the winner and the
/// tie set of finalists the noise cannot separate from it.

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "engine/autotune/autotune.hpp"
#include "engine/autotune/autotune_session.hpp"
#include "engine/graph/lane_worker.hpp"

namespace rpl::engine {

struct final_round_settings {
  std::size_t max_finalists = 5;
  std::uint32_t rounds = 10;
  std::uint32_t runs_per_round = 1; ///< samples per finalist per round; their median is the round's
  double noise_target = 0.005;
};

/// nullopt, with `note` saying why, when fewer than two finalists exist or the run is stopping.
std::optional<final_round_result>
run_final_round(lane_worker& lane,
                const std::vector<autotune_session::measured_candidate>& measured,
                const final_round_settings& settings,
                const std::atomic<bool>& stop,
                std::string& note);

} // namespace rpl::engine
