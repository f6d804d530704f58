#pragma once
/// The honest winner: the sweep's finalists (stages/search/finalists.hpp) are re-measured
/// interleaved, round after round (A B C, B C A, ...: the order rotates so that no finalist always
/// runs first), and a paired comparison of the rounds decides the winner and the tie set of
/// finalists the noise cannot separate from it. Every round runs whole on one lane, so each pair
/// is measured on one device; with several lanes (the caller passes those of one device model) the
/// rounds are dealt out to them (round r on lane r mod L) and run at the same time, so that a
/// second GPU halves the final round too.

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
run_final_round(const std::vector<lane_worker*>& lanes,
                const std::vector<autotune_session::measured_candidate>& measured,
                const final_round_settings& settings,
                const std::atomic<bool>& stop,
                std::string& note);

} // namespace rpl::engine
