// workers::clock_watch_lane over a scripted clock probe and the fake lane: the readings come from
// the poller's thread (never the lane's), violation counters become per-measurement time, a
// slowing reason seen only between the end readings still flags the measurement, back-to-back
// measurements share a reading, an idle poller stops reading, and a probe that cannot read leaves
// the result without evidence rather than failing it or hanging it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/fake_lane.hpp"
#include "workers/lanes/clocks/clock_watch_lane.hpp"

namespace rpl::workers {
namespace {

using std::chrono::milliseconds;

/// Reading n (from 1) says sm_mhz = 1000 + n. While armed, each reading shows the sw_power_cap
/// reason and, when `count_violation` is set, adds 1 ms to the power violation counter.
class scripted_probe final : public gpu_clock_probe {
public:
  std::atomic<bool> fail{false};
  std::atomic<int> armed{0}; ///< this many coming readings are "throttled"
  bool count_violation = true;

  std::optional<gpu_clock_reading> read(const std::string& uuid) override {
    std::lock_guard lock(mutex_);
    threads_.insert(std::this_thread::get_id());
    asked_ = uuid;
    ++reads_;
    if (fail)
      return std::nullopt;
    gpu_clock_reading r;
    r.sm_mhz = 1000 + static_cast<std::uint32_t>(reads_);
    r.thermal_violation_ns = 70;
    if (armed > 0) {
      --armed;
      r.reasons = 0x4;
      if (count_violation)
        violation_ += 1'000'000;
    }
    r.power_violation_ns = violation_;
    return r;
  }
  int reads() {
    std::lock_guard lock(mutex_);
    return reads_;
  }
  bool read_on(std::thread::id thread) {
    std::lock_guard lock(mutex_);
    return threads_.contains(thread);
  }
  std::string asked() {
    std::lock_guard lock(mutex_);
    return asked_;
  }

private:
  std::mutex mutex_;
  int reads_ = 0;
  std::int64_t violation_ = 5'000'000;
  std::set<std::thread::id> threads_;
  std::string asked_;
};

/// Inside a measurement: makes the next `n` readings throttled, then waits (up to 10 s: a loaded
/// machine may not run the poller for a while) until the poller took them and two more, so the
/// measurement's end reading comes after them whatever the scheduling.
void throttle_next_readings(scripted_probe& probe, int n) {
  const int before = probe.reads();
  probe.armed = n;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (probe.reads() < before + n + 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(milliseconds(1));
}

/// Inside a measurement: waits until the poller took `n` more readings (up to 10 s).
void let_the_poller_read(scripted_probe& probe, int n) {
  const int before = probe.reads();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (probe.reads() < before + n && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(milliseconds(1));
}

messages::measure_request request_for(const std::string& key) {
  messages::measure_request r;
  r.candidate_key = key;
  r.runs = 3;
  return r;
}

clock_poller::timing fast_polling() {
  clock_poller::timing t;
  t.period = std::chrono::microseconds(500);
  t.idle_after = milliseconds(5000);
  t.wait_limit = milliseconds(5000);
  return t;
}

/// A fake lane answering every key with three samples, after `script` ran (inside measure()).
std::unique_ptr<rpl::testing::fake_lane> lane_running(std::function<void()> script = {}) {
  auto fake = std::make_unique<rpl::testing::fake_lane>("gpu0");
  fake->otherwise([script](const messages::measure_request&) {
    if (script)
      script();
    messages::measure_result result;
    result.status = messages::measure_status::ok;
    result.samples_ns = {100, 101, 102};
    return result;
  });
  return fake;
}

TEST(workers_clock_watch_lane, records_clocks_around_a_measurement_read_on_the_pollers_thread) {
  auto probe = std::make_shared<scripted_probe>();
  clock_watch_lane lane(lane_running([&probe] { let_the_poller_read(*probe, 3); }), probe,
                        "GPU-1234", milliseconds(20), fast_polling());
  const auto result = lane.measure(request_for("a"));
  EXPECT_EQ(result.status, messages::measure_status::ok);
  EXPECT_EQ(result.samples_ns.size(), 3u) << "the inner lane's result is kept";
  EXPECT_EQ(probe->asked(), "GPU-1234");
  EXPECT_TRUE(result.clocks.read);
  EXPECT_GT(result.clocks.sm_mhz_after, result.clocks.sm_mhz_before)
      << "the poller read on during the measurement";
  EXPECT_EQ(result.clocks.power_violation_ns, 0)
      << "cumulative counters: the growth is what counts";
  EXPECT_EQ(result.clocks.thermal_violation_ns, 0);
  EXPECT_FALSE(result.clocks.throttled);
  EXPECT_FALSE(probe->read_on(std::this_thread::get_id()))
      << "the lane's thread never waits for NVML";
  EXPECT_EQ(lane.name(), "gpu0");
}

TEST(workers_clock_watch_lane, violation_time_during_the_measurement_flags_it) {
  auto probe = std::make_shared<scripted_probe>();
  clock_watch_lane lane(lane_running([&probe] { throttle_next_readings(*probe, 3); }), probe,
                        "GPU-1", milliseconds(20), fast_polling());
  const auto result = lane.measure(request_for("a"));
  EXPECT_EQ(result.clocks.power_violation_ns, 3'000'000);
  EXPECT_EQ(result.clocks.thermal_violation_ns, 0);
  EXPECT_TRUE(result.clocks.throttled);
}

TEST(workers_clock_watch_lane, a_slowing_reason_seen_only_between_the_end_readings_flags_it) {
  auto probe = std::make_shared<scripted_probe>();
  probe->count_violation = false;
  clock_watch_lane lane(lane_running([&probe] { throttle_next_readings(*probe, 1); }), probe,
                        "GPU-1", milliseconds(20), fast_polling());
  const auto result = lane.measure(request_for("a"));
  EXPECT_EQ(result.clocks.reasons_before, 0u);
  EXPECT_EQ(result.clocks.reasons_after, 0u) << "the throttled reading was neither end";
  EXPECT_EQ(result.clocks.power_violation_ns, 0);
  EXPECT_TRUE(result.clocks.throttled);
}

TEST(workers_clock_watch_lane, a_probe_that_cannot_read_leaves_no_evidence_and_no_failure) {
  auto probe = std::make_shared<scripted_probe>();
  probe->fail = true;
  clock_poller::timing t = fast_polling();
  t.wait_limit = milliseconds(200);
  clock_watch_lane lane(lane_running(), probe, "GPU-1", milliseconds(20), t);
  const auto started = std::chrono::steady_clock::now();
  const auto result = lane.measure(request_for("a"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(4))
      << "a failing probe costs at most the wait limit";
  EXPECT_EQ(result.status, messages::measure_status::ok);
  EXPECT_FALSE(result.clocks.read);
  EXPECT_FALSE(result.clocks.throttled);
}

TEST(workers_clock_watch_lane, back_to_back_measurements_share_the_reading_between_them) {
  auto probe = std::make_shared<scripted_probe>();
  clock_watch_lane lane(lane_running([&probe] { let_the_poller_read(*probe, 2); }), probe, "GPU-1",
                        std::chrono::hours(1), fast_polling());
  const auto a = lane.measure(request_for("a"));
  const auto b = lane.measure(request_for("b"));
  ASSERT_TRUE(a.clocks.read && b.clocks.read);
  EXPECT_EQ(b.clocks.sm_mhz_before, a.clocks.sm_mhz_after)
      << "b starts from a's after: the counters' growth is split with neither gap nor overlap";
}

TEST(workers_clock_watch_lane, an_idle_poller_sleeps_and_reads_afresh_before_the_next_measurement) {
  auto probe = std::make_shared<scripted_probe>();
  clock_poller::timing t = fast_polling();
  t.idle_after = milliseconds(20);
  clock_watch_lane lane(lane_running(), probe, "GPU-1", milliseconds(0), t);
  const auto a = lane.measure(request_for("a"));
  ASSERT_TRUE(a.clocks.read);
  std::this_thread::sleep_for(milliseconds(300));
  const int asleep = probe->reads();
  std::this_thread::sleep_for(milliseconds(200));
  // At most one reading that a starved poller had begun before it went idle; polling on would
  // make hundreds (one per 0.5 ms).
  EXPECT_LE(probe->reads() - asleep, 1) << "no reading while nobody measures";
  const auto b = lane.measure(request_for("b"));
  ASSERT_TRUE(b.clocks.read);
  EXPECT_GT(b.clocks.sm_mhz_before, static_cast<std::uint32_t>(1000 + asleep))
      << "the reading before b was taken after the pause, not the stale one";
}

} // namespace
} // namespace rpl::workers
