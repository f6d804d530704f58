#include <cmath>

#include <gtest/gtest.h>

#include "support/fake_lane.hpp"
#include "workers/lanes/adaptive/adaptive_lane.hpp"

namespace rpl::workers {
namespace {

using messages::measure_status;

/// A lane whose samples alternate around 1 ms by +-`spread` (relative), `runs` per call.
std::unique_ptr<testing::fake_lane> alternating_lane(double spread, std::size_t* calls) {
  auto lane = std::make_unique<testing::fake_lane>("gpu0");
  lane->otherwise([spread, calls, n = std::size_t{0}](const messages::measure_request& r) mutable {
    ++*calls;
    messages::measure_result result;
    result.status = measure_status::ok;
    result.device_model = "Fake GPU";
    result.device_uuid = "GPU-fake";
    for (std::uint32_t i = 0; i < r.runs; ++i, ++n) {
      const double f = (n % 2 == 0) ? 1.0 + spread : 1.0 - spread;
      result.samples_ns.push_back(static_cast<std::int64_t>(1e6 * f));
    }
    return result;
  });
  return lane;
}

messages::measure_request request(std::uint32_t runs) {
  messages::measure_request r;
  r.candidate_key = "k";
  r.runs = runs;
  r.warmup = 1;
  return r;
}

TEST(workers_adaptive_lane, stops_once_the_noise_is_under_the_target) {
  std::size_t calls = 0;
  stages::sampling_target target;
  target.max_noise = 0.005;
  target.min_samples = 10;
  target.min_time_s = 0.0;
  target.max_time_s = 60.0;
  adaptive_lane lane(alternating_lane(0.001, &calls), target, 4);
  const auto r = lane.measure(request(4));
  EXPECT_EQ(r.status, measure_status::ok);
  // 4 (first batch) + 4 + 4: the 10th sample converges, inside the third batch.
  EXPECT_EQ(r.samples_ns.size(), 12u);
  EXPECT_EQ(calls, 3u);
  EXPECT_EQ(r.sampling, "converged");
  EXPECT_FALSE(r.noisy);
  EXPECT_GT(r.noise, 0.0);
  EXPECT_LT(r.noise, 0.005);
  EXPECT_EQ(r.device_uuid, "GPU-fake");
  EXPECT_EQ(r.lane, "gpu0");
}

TEST(workers_adaptive_lane, a_noisy_candidate_stops_at_the_cap_and_is_flagged) {
  std::size_t calls = 0;
  stages::sampling_target target;
  target.max_noise = 0.005;
  target.min_samples = 10;
  target.min_time_s = 0.0;
  target.max_time_s = 0.0; // the cap is hit after the first batch that reaches the minimum
  adaptive_lane lane(alternating_lane(0.05, &calls), target, 5);
  const auto r = lane.measure(request(10));
  EXPECT_EQ(r.status, measure_status::ok);
  EXPECT_EQ(r.sampling, "time_cap");
  EXPECT_TRUE(r.noisy);
  EXPECT_NEAR(r.noise, 0.05, 0.005);
  EXPECT_EQ(r.samples_ns.size(), 10u);
}

TEST(workers_adaptive_lane, a_failing_batch_fails_the_candidate_with_the_samples_so_far) {
  auto inner = std::make_unique<testing::fake_lane>("gpu0");
  int call = 0;
  inner->otherwise([&call](const messages::measure_request& r) {
    messages::measure_result result;
    if (++call == 2) {
      result.status = measure_status::crashed;
      result.reason = "run 0 was killed by SIGSEGV (Segmentation fault)";
      return result;
    }
    result.status = measure_status::ok;
    result.samples_ns.assign(r.runs, 1'000'000 + 100'000 * call);
    return result;
  });
  stages::sampling_target target;
  target.min_samples = 100;
  target.min_time_s = 0.0;
  adaptive_lane lane(std::move(inner), target, 3);
  const auto r = lane.measure(request(3));
  EXPECT_EQ(r.status, measure_status::crashed);
  EXPECT_EQ(r.samples_ns.size(), 3u);
  EXPECT_NE(r.reason.find("SIGSEGV"), std::string::npos);
}

} // namespace
} // namespace rpl::workers
