#include "engine/autotune/final_round.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "engine/campaign/interleaved_rounds.hpp"
#include "stages/search/finalists.hpp"
#include "stages/statistics/statistics.hpp"

namespace rpl::engine {

namespace {

finalist_result to_result(const stages::finalist_comparison& c) {
  finalist_result r;
  r.key = c.key;
  r.median_ns = c.time_ns.median;
  r.low_ns = c.time_ns.low;
  r.high_ns = c.time_ns.high;
  r.relative_difference = c.relative_difference.median;
  r.relative_low = c.relative_difference.low;
  r.relative_high = c.relative_difference.high;
  r.separating_noise = c.separating_noise;
  r.tied = c.tied;
  return r;
}

} // namespace

std::optional<final_round_result>
run_final_round(const std::vector<lane_worker*>& lanes,
                const std::vector<autotune_session::measured_candidate>& measured,
                const final_round_settings& settings,
                const std::atomic<bool>& stop,
                std::string& note) {
  stages::finalist_config config;
  config.max_finalists = settings.max_finalists;
  config.target_noise = settings.noise_target;
  std::vector<stages::keyed_samples> sweep;
  std::map<std::string, const autotune_session::measured_candidate*> by_key;
  for (const auto& m : measured) {
    sweep.push_back({m.key, std::vector<double>(m.samples_ns.begin(), m.samples_ns.end())});
    by_key[m.key] = &m;
  }
  const auto finalists = stages::choose_finalists(sweep, config);
  if (settings.max_finalists < 2 || settings.rounds == 0 || finalists.size() < 2) {
    note = finalists.size() < 2 ? "fewer than two valid candidates: no final round"
                                : "final round off (--finalists < 2 or --final-rounds 0)";
    return std::nullopt;
  }
  std::string lane_names;
  for (const lane_worker* lane : lanes)
    lane_names += (lane_names.empty() ? "" : ",") + lane->name();
  spdlog::info("final round: {} finalists x {} rounds, interleaved on {}", finalists.size(),
               settings.rounds, lane_names);
  const std::size_t lane_count = std::max<std::size_t>(lanes.size(), 1);
  std::vector<messages::measure_request> sides;
  for (const auto& key : finalists)
    sides.push_back(by_key.at(key)->request);
  std::vector<std::vector<double>> values(
      finalists.size(),
      std::vector<double>(settings.rounds, std::numeric_limits<double>::quiet_NaN()));
  // Lane k runs rounds k, k + L, ...: each round whole on one lane (one device per pair), each
  // lane's first round with the requests' warm-up.
  auto run_rounds = [&](std::size_t k) {
    round_plan plan;
    plan.rounds = settings.rounds;
    plan.runs_per_round = settings.runs_per_round;
    plan.first_round = static_cast<std::uint32_t>(k);
    plan.stride = static_cast<std::uint32_t>(lane_count);
    lane_worker& lane = *lanes[k];
    run_interleaved_rounds(
        sides, plan, [&lane](const messages::measure_request& r) { return lane.measure_now(r); },
        stop, values);
  };
  {
    std::vector<std::jthread> others;
    for (std::size_t k = 1; k < lanes.size(); ++k)
      others.emplace_back(run_rounds, k);
    run_rounds(0);
  }
  if (stop) {
    note = "interrupted before the final round finished";
    return std::nullopt;
  }
  // Each round's slot was written by the one lane that ran it; a missed round stays NaN.
  std::vector<stages::keyed_samples> rounds(finalists.size());
  for (std::size_t f = 0; f < finalists.size(); ++f)
    rounds[f] = {finalists[f], std::move(values[f])};
  const auto decision = stages::decide_winner(rounds, config);
  final_round_result out;
  out.lane = lane_names;
  out.rounds = settings.rounds;
  out.confidence = config.confidence;
  out.noise_target = settings.noise_target;
  out.winner = decision.winner;
  out.tie_set = decision.tie_set;
  for (const auto& c : decision.finalists) {
    out.finalists.push_back(to_result(c));
  }
  if (out.tie_set.size() > 1) {
    note = std::to_string(out.tie_set.size()) +
           " finalists are within the noise of each other: a tie, not a single winner";
  }
  return out;
}

} // namespace rpl::engine
