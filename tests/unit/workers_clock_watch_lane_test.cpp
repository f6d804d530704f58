// workers::clock_watch_lane over a scripted clock probe and the fake lane: what it records around
// a measurement, how violation counters become per-measurement time, and that a probe that cannot
// read leaves the result without evidence rather than failing it.

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/fake_lane.hpp"
#include "workers/lanes/clocks/clock_watch_lane.hpp"

namespace rpl::workers {
namespace {

/// Answers reads from a queue; records which GPU was asked for.
class scripted_probe final : public gpu_clock_probe {
public:
  std::deque<std::optional<gpu_clock_reading>> readings;
  std::vector<std::string> asked;
  std::optional<gpu_clock_reading> read(const std::string& uuid) override {
    asked.push_back(uuid);
    auto next = readings.front();
    readings.pop_front();
    return next;
  }
};

messages::measure_request request_for(const std::string& key) {
  messages::measure_request r;
  r.candidate_key = key;
  r.runs = 3;
  return r;
}

TEST(workers_clock_watch_lane, records_clocks_before_and_after_and_the_violation_in_between) {
  auto probe = std::make_shared<scripted_probe>();
  probe->readings = {gpu_clock_reading{345, 0x1, 1000, 70}, gpu_clock_reading{1980, 0x0, 1000, 70}};
  auto fake = std::make_unique<rpl::testing::fake_lane>("gpu0");
  fake->succeed("a", {100, 101, 102});
  clock_watch_lane lane(std::move(fake), probe, "GPU-1234");
  const auto result = lane.measure(request_for("a"));
  EXPECT_EQ(result.status, messages::measure_status::ok);
  EXPECT_EQ(result.samples_ns.size(), 3u) << "the inner lane's result is kept";
  EXPECT_EQ(probe->asked, (std::vector<std::string>{"GPU-1234", "GPU-1234"}));
  EXPECT_TRUE(result.clocks.read);
  EXPECT_EQ(result.clocks.sm_mhz_before, 345u);
  EXPECT_EQ(result.clocks.sm_mhz_after, 1980u);
  EXPECT_EQ(result.clocks.reasons_before, 0x1u);
  EXPECT_EQ(result.clocks.power_violation_ns, 0)
      << "cumulative counters: the growth is what counts";
  EXPECT_EQ(result.clocks.thermal_violation_ns, 0);
  EXPECT_FALSE(result.clocks.throttled) << "idle before the run is not throttling";
  EXPECT_EQ(lane.name(), "gpu0");
}

TEST(workers_clock_watch_lane, flags_a_measurement_during_which_the_power_limit_held_the_clock) {
  auto probe = std::make_shared<scripted_probe>();
  probe->readings = {gpu_clock_reading{1980, 0x0, 5'000'000, -1},
                     gpu_clock_reading{1600, 0x0, 9'000'000, -1}};
  auto fake = std::make_unique<rpl::testing::fake_lane>("gpu0");
  fake->succeed("a", {100, 101, 102});
  clock_watch_lane lane(std::move(fake), probe, "GPU-1", std::chrono::milliseconds(0));
  const auto result = lane.measure(request_for("a"));
  EXPECT_EQ(result.clocks.power_violation_ns, 4'000'000);
  EXPECT_EQ(result.clocks.thermal_violation_ns, -1) << "unsupported stays unknown";
  EXPECT_TRUE(result.clocks.throttled);

  probe->readings = {gpu_clock_reading{1980, 0x0, 0, 0}, gpu_clock_reading{1700, 0x4, 0, 0}};
  EXPECT_TRUE(lane.measure(request_for("a")).clocks.throttled) << "sw_power_cap after the run";
}

TEST(workers_clock_watch_lane, a_probe_that_cannot_read_leaves_no_evidence_and_no_failure) {
  auto probe = std::make_shared<scripted_probe>();
  probe->readings = {gpu_clock_reading{1980, 0, 0, 0}, std::nullopt};
  auto fake = std::make_unique<rpl::testing::fake_lane>("gpu0");
  fake->succeed("a", {100});
  clock_watch_lane lane(std::move(fake), probe, "GPU-1");
  const auto result = lane.measure(request_for("a"));
  EXPECT_EQ(result.status, messages::measure_status::ok);
  EXPECT_FALSE(result.clocks.read);
  EXPECT_FALSE(result.clocks.throttled);
}

TEST(workers_clock_watch_lane, back_to_back_measurements_share_the_reading_between_them) {
  auto probe = std::make_shared<scripted_probe>();
  probe->readings = {gpu_clock_reading{1980, 0x0, 1000, 0}, gpu_clock_reading{1980, 0x0, 1000, 0},
                     gpu_clock_reading{1700, 0x0, 3000, 0}, gpu_clock_reading{1980, 0x0, 3000, 0},
                     gpu_clock_reading{1980, 0x0, 3000, 0}};
  auto fake = std::make_unique<rpl::testing::fake_lane>("gpu0");
  fake->succeed("a", {100});
  fake->succeed("b", {100});
  fake->succeed("c", {100});
  clock_watch_lane lane(std::move(fake), probe, "GPU-1", std::chrono::hours(1));
  EXPECT_FALSE(lane.measure(request_for("a")).clocks.throttled);
  EXPECT_EQ(probe->asked.size(), 2u) << "the first measurement reads before and after";
  const auto b = lane.measure(request_for("b"));
  EXPECT_EQ(probe->asked.size(), 3u) << "the next one starts from the previous one's after";
  EXPECT_EQ(b.clocks.sm_mhz_before, 1980u);
  EXPECT_EQ(b.clocks.power_violation_ns, 2000);
  EXPECT_TRUE(b.clocks.throttled);
  const auto c = lane.measure(request_for("c"));
  EXPECT_EQ(c.clocks.sm_mhz_before, 1700u) << "b's after";
  EXPECT_EQ(c.clocks.power_violation_ns, 0);
  EXPECT_FALSE(c.clocks.throttled);

  // After a pause longer than the window, a fresh reading is taken before.
  auto probe2 = std::make_shared<scripted_probe>();
  probe2->readings = {gpu_clock_reading{1980, 0, 0, 0}, gpu_clock_reading{1980, 0, 0, 0},
                      gpu_clock_reading{1980, 0, 0, 0}, gpu_clock_reading{1980, 0, 0, 0}};
  auto fake2 = std::make_unique<rpl::testing::fake_lane>("gpu0");
  fake2->succeed("a", {100});
  fake2->succeed("b", {100});
  clock_watch_lane apart(std::move(fake2), probe2, "GPU-1", std::chrono::milliseconds(0));
  apart.measure(request_for("a"));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  apart.measure(request_for("b"));
  EXPECT_EQ(probe2->asked.size(), 4u);
}

} // namespace
} // namespace rpl::workers
