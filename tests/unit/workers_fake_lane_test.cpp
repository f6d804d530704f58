// The lane test double (tests/support/fake_lane.hpp) does what the engine tests rely on.

#include <gtest/gtest.h>

#include "support/fake_lane.hpp"

namespace rpl::testing {
namespace {

using namespace std::chrono_literals;
using messages::measure_status;

messages::measure_request request(const std::string& key) {
  messages::measure_request r;
  r.candidate_key = key;
  r.runs = 3;
  return r;
}

TEST(workers_fake_lane, answers_scripted_keys_and_records_every_call) {
  fake_lane lane("gpu1");
  lane.succeed("a", {100, 110, 120})
      .fail("b", measure_status::crashed, "run 0 was killed by SIGSEGV");
  workers::lane_backend& backend = lane;
  const auto a = backend.measure(request("a"));
  const auto b = backend.measure(request("b"));
  const auto a2 = backend.measure(request("a"));
  EXPECT_EQ(a.status, measure_status::ok);
  EXPECT_EQ(a.samples_ns, (std::vector<std::int64_t>{100, 110, 120}));
  EXPECT_EQ(a.lane, "gpu1");
  EXPECT_EQ(b.status, measure_status::crashed);
  EXPECT_EQ(b.reason, "run 0 was killed by SIGSEGV");
  EXPECT_EQ(b.failed_run, 0);
  EXPECT_EQ(a2.samples_ns, a.samples_ns);
  EXPECT_EQ(lane.calls(), 3u);
  EXPECT_EQ(lane.calls_for("a"), 2u);
  EXPECT_EQ(lane.calls_for("c"), 0u);
  ASSERT_EQ(lane.requests().size(), 3u);
  EXPECT_EQ(lane.requests()[1].candidate_key, "b");
  EXPECT_EQ(backend.name(), "gpu1");
}

TEST(workers_fake_lane, unscripted_keys_go_to_the_callback_or_fail_loudly) {
  fake_lane lane;
  const auto unscripted = lane.measure(request("zz"));
  EXPECT_EQ(unscripted.status, measure_status::not_run);
  EXPECT_NE(unscripted.reason.find("no script for candidate zz"), std::string::npos)
      << unscripted.reason;
  lane.otherwise([](const messages::measure_request& r) {
    messages::measure_result result;
    result.status = measure_status::ok;
    result.samples_ns.assign(r.runs, static_cast<std::int64_t>(r.candidate_key.size()));
    return result;
  });
  const auto answered = lane.measure(request("four"));
  EXPECT_EQ(answered.status, measure_status::ok);
  EXPECT_EQ(answered.samples_ns, (std::vector<std::int64_t>{4, 4, 4}));
  EXPECT_EQ(answered.lane, "fake0");
}

TEST(workers_fake_lane, sleeps_when_asked) {
  fake_lane lane;
  lane.succeed("a", {1}).sleep_for(30ms);
  const auto started = std::chrono::steady_clock::now();
  (void)lane.measure(request("a"));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 30ms);
}

} // namespace
} // namespace rpl::testing
