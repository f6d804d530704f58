#pragma once
/// Interleaved rounds, the measurement both verbs decide winners with (autotune's final round,
/// optimize's paired comparison): each round measures every side once, in an order that rotates
/// round by round (A B C, B C A, ...), so that no side always runs first (warm caches, clocks);
/// a round's value for a side is the median of its `runs` samples. A failed measurement leaves
/// NaN in its slot: a missed round for that side, which the paired statistics skip.

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "messages/wire.hpp"

namespace rpl::engine {

struct round_plan {
  std::uint32_t rounds = 10;
  std::uint32_t runs_per_round = 1;
  /// Rounds from `first_round` on, every `stride`-th (a lane's share when several run them).
  std::uint32_t first_round = 0;
  std::uint32_t stride = 1;
  /// Warm-up launches in the first round this caller runs; `warmup_every_round` repeats them.
  bool warmup_every_round = false;
};

/// Measures one request and returns its result (a lane_worker's measure_now, or a lane backend
/// called on its own thread).
using measure_fn = std::function<messages::measure_result(const messages::measure_request&)>;

/// The median of a round's samples (stages/statistics), NaN without any.
double round_median(const std::vector<std::int64_t>& samples_ns);

/// Runs `plan`'s rounds over `sides` and writes each round's median into `values[side][round]`
/// (sized by the caller: sides x rounds, NaN-filled); stops between measurements once `stop`.
void run_interleaved_rounds(const std::vector<messages::measure_request>& sides,
                            const round_plan& plan,
                            const measure_fn& measure,
                            const std::atomic<bool>& stop,
                            std::vector<std::vector<double>>& values);

} // namespace rpl::engine
