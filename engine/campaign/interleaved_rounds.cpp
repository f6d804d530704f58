#include "engine/campaign/interleaved_rounds.hpp"

#include <limits>

#include "stages/statistics/statistics.hpp"

namespace rpl::engine {

double round_median(const std::vector<std::int64_t>& samples_ns) {
  return samples_ns.empty() ? std::numeric_limits<double>::quiet_NaN()
                            : stages::summarize(samples_ns).median;
}

void run_interleaved_rounds(const std::vector<messages::measure_request>& sides,
                            const round_plan& plan,
                            const measure_fn& measure,
                            const std::atomic<bool>& stop,
                            std::vector<std::vector<double>>& values) {
  const std::size_t n = sides.size();
  for (std::uint32_t r = plan.first_round; r < plan.rounds && !stop; r += plan.stride) {
    for (std::size_t i = 0; i < n && !stop; ++i) {
      const std::size_t side = (i + r) % n;
      auto request = sides[side];
      request.fixed_count = true;
      request.runs = plan.runs_per_round;
      if (!plan.warmup_every_round && r != plan.first_round) {
        request.warmup = 0;
      }
      const auto result = measure(request);
      if (result.status == messages::measure_status::ok) {
        values[side][r] = round_median(result.samples_ns);
      }
    }
  }
}

} // namespace rpl::engine
