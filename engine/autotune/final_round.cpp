#include "engine/autotune/final_round.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "stages/search/finalists.hpp"
#include "stages/statistics/statistics.hpp"

namespace rpl::engine {

namespace {

/// The round's sample: the median of its launches or runs (stages/statistics), NaN without any.
double median_of(const std::vector<std::int64_t>& values) {
  return values.empty() ? std::numeric_limits<double>::quiet_NaN()
                        : stages::summarize(values).median;
}

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
  // Each round's slot is written by the one lane that runs it; a missed round stays NaN.
  std::vector<stages::keyed_samples> rounds(finalists.size());
  for (std::size_t f = 0; f < finalists.size(); ++f) {
    rounds[f].key = finalists[f];
    rounds[f].samples_ns.assign(settings.rounds, std::numeric_limits<double>::quiet_NaN());
  }
  const std::size_t lane_count = std::max<std::size_t>(lanes.size(), 1);
  auto run_rounds = [&](std::size_t k) {
    lane_worker& lane = *lanes[k];
    for (std::uint32_t r = static_cast<std::uint32_t>(k); r < settings.rounds && !stop;
         r += static_cast<std::uint32_t>(lane_count)) {
      for (std::size_t i = 0; i < finalists.size(); ++i) {
        const std::size_t f = (i + r) % finalists.size();
        auto request = by_key.at(finalists[f])->request;
        request.fixed_count = true;
        request.runs = settings.runs_per_round;
        request.warmup = r < lane_count ? request.warmup : 0; // each lane's first round warms up
        const auto result = lane.measure_now(request);
        // A failed round is a missed round for that finalist (the comparison skips it).
        if (result.status == messages::measure_status::ok)
          rounds[f].samples_ns[r] = median_of(result.samples_ns);
      }
    }
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
