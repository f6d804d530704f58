// The long-lived replay lane (workers/lanes/replay/served_replay_lane.hpp) through the real
// engine-side kernel lane and the real replay server, over tests/tools/fake_replay_lane (the
// server on a scripted device and a capture in host memory: `in` not written by the dispatch,
// `out` = in * 1 after it). One process serves every candidate; the checked launch is compared
// with the capture's after-state, an input written and a red zone crossed are refused with their
// findings, the written region is restored before every timed launch (a kernel that skips work
// when its output already holds the result cannot), a fault costs one restart.
#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/lanes/replay/served_replay_lane.hpp"

namespace rpl::workers {
namespace {

class served_replay_lane_test : public ::testing::Test {
protected:
  served_replay_lane_options options() const {
    served_replay_lane_options o;
    o.name = "gpu3";
    o.capture = dir_.path() / "capture";
    o.program = RPL_FAKE_REPLAY_LANE;
    o.device = 3;
    o.start_timeout = std::chrono::seconds(20);
    o.reply_allowance = std::chrono::seconds(10);
    return o;
  }

  /// A fake code object with the captured kernel's name, `scale`, and these words.
  std::string module(const std::string& name, const std::string& words) const {
    const auto path = dir_.path() / (name + ".cubin");
    testing::write_file(path, "rpl-fake-module\nkernel scale " + words + "\n");
    return path.string();
  }

  static messages::measure_request
  request(const std::string& code, std::uint32_t runs = 5, std::uint32_t warmup = 1) {
    messages::measure_request r;
    r.candidate_key = code;
    r.argv = {code};
    r.runs = runs;
    r.warmup = warmup;
    r.timeout_ms = 5000;
    r.fixed_count = true;
    return r;
  }

  testing::temp_dir dir_;
};

TEST_F(served_replay_lane_test, one_process_serves_every_candidate_verified_and_timed) {
  served_replay_lane lane(options());
  const auto fast = lane.measure(request(module("fast", "duration_us=50")));
  ASSERT_EQ(fast.status, messages::measure_status::ok) << fast.reason;
  EXPECT_EQ(fast.samples_ns, std::vector<std::int64_t>(5, 50'000));
  EXPECT_TRUE(lane.last_reply().verified);
  EXPECT_TRUE(lane.last_reply().red_zones);
  EXPECT_NE(fast.device_model.find("CUDA_VISIBLE_DEVICES=3"), std::string::npos);
  const auto slow = lane.measure(request(module("slow", "duration_us=80")));
  ASSERT_EQ(slow.status, messages::measure_status::ok) << slow.reason;
  EXPECT_EQ(slow.samples_ns.front(), 80'000);
  // The same code object again: from the module cache, not checked again.
  const auto again = lane.measure(request(module("fast", "duration_us=50")));
  ASSERT_EQ(again.status, messages::measure_status::ok);
  EXPECT_EQ(lane.starts(), 1u);
}

TEST_F(served_replay_lane_test, outputs_unlike_the_capture_are_a_wrong_result_naming_the_region) {
  served_replay_lane lane(options());
  const auto wrong = lane.measure(request(module("wrong", "factor=2")));
  EXPECT_EQ(wrong.status, messages::measure_status::wrong_result);
  EXPECT_NE(wrong.reason.find("written by the captured dispatch"), std::string::npos)
      << wrong.reason;
  EXPECT_NE(wrong.reason.find("after-state"), std::string::npos) << wrong.reason;
  // The lane goes on: the next candidate is right.
  const auto right = lane.measure(request(module("right", "")));
  EXPECT_EQ(right.status, messages::measure_status::ok) << right.reason;
}

TEST_F(served_replay_lane_test, a_written_input_and_a_crossed_red_zone_are_refused_and_repaired) {
  served_replay_lane lane(options());
  const auto input = lane.measure(request(module("input", "behavior=write_input")));
  EXPECT_EQ(input.status, messages::measure_status::wrong_result);
  EXPECT_EQ(input.finding, "inputs_modified");
  EXPECT_NE(input.reason.find("not written by the captured dispatch"), std::string::npos)
      << input.reason;
  const auto oob = lane.measure(request(module("oob", "behavior=oob_write")));
  EXPECT_EQ(oob.status, messages::measure_status::wrong_result);
  EXPECT_EQ(oob.finding, "memory:out_of_bounds");
  EXPECT_EQ(lane.last_reply().violation.side, "after");
  EXPECT_NE(oob.reason.find("past its end"), std::string::npos) << oob.reason;
  const auto before = lane.measure(request(module("before", "behavior=oob_before")));
  EXPECT_EQ(before.finding, "memory:out_of_bounds");
  // The input and the zones were put back: a right kernel passes.
  const auto right = lane.measure(request(module("right", "")));
  EXPECT_EQ(right.status, messages::measure_status::ok) << right.reason;
}

TEST_F(served_replay_lane_test, a_write_into_the_region_next_door_is_out_of_bounds_not_a_mismatch) {
  // The allocation walk's layout: `out` followed at once by a region the dispatch does not write.
  auto o = options();
  o.capture = dir_.path() / "capture-adjacent";
  served_replay_lane lane(o);
  const auto oob = lane.measure(request(module("oob", "behavior=oob_write")));
  EXPECT_EQ(oob.finding, "memory:out_of_bounds") << oob.reason;
  EXPECT_NE(oob.reason.find("past its end"), std::string::npos) << oob.reason;
  EXPECT_NE(oob.reason.find("right beside it"), std::string::npos) << oob.reason;
  // out[1000] = 1.0f over zeros: bytes 4000..4003, of which 4002 is the first that changes.
  EXPECT_EQ(lane.last_reply().violation.offset, 4002);
  const auto right = lane.measure(request(module("right", "")));
  EXPECT_EQ(right.status, messages::measure_status::ok) << right.reason;
}

TEST_F(served_replay_lane_test, a_write_into_the_region_before_is_out_of_bounds_not_a_mismatch) {
  // `out` preceded at once by a region the dispatch does not write: out[-1] lands in its last
  // float.
  auto o = options();
  o.capture = dir_.path() / "capture-preceded";
  served_replay_lane lane(o);
  const auto before = lane.measure(request(module("before", "behavior=oob_before")));
  EXPECT_EQ(before.finding, "memory:out_of_bounds") << before.reason;
  EXPECT_NE(before.reason.find("bytes before the start of region"), std::string::npos)
      << before.reason;
  EXPECT_EQ(lane.last_reply().violation.side, "before");
  EXPECT_LT(lane.last_reply().violation.offset, 0);
  EXPECT_GE(lane.last_reply().violation.offset, -4);
  const auto right = lane.measure(request(module("right", "")));
  EXPECT_EQ(right.status, messages::measure_status::ok) << right.reason;
}

TEST_F(served_replay_lane_test, every_timed_launch_sees_the_captured_inputs) {
  served_replay_lane lane(options());
  // `lazy` skips its work (1 us) when the output already holds the result: restored before every
  // launch, it never does.
  const auto lazy = lane.measure(request(module("lazy", "behavior=lazy duration_us=40")));
  ASSERT_EQ(lazy.status, messages::measure_status::ok) << lazy.reason;
  EXPECT_EQ(lazy.samples_ns, std::vector<std::int64_t>(5, 40'000));
}

TEST_F(served_replay_lane_test,
       a_kernel_wrong_only_in_the_timed_phase_is_caught_by_the_spot_check) {
  served_replay_lane lane(options());
  auto r = request(module("late", "behavior=wrong_late"), 10, 1);
  r.spot_checks = 1;
  // Wrong from its fifth launch on: the checked launch passes, and by the second request every
  // spot check (wherever the seed puts it) falls on a wrong launch.
  messages::measure_result late;
  for (int i = 0; i < 3 && late.finding.empty(); ++i) {
    r.candidate_key = "late#" + std::to_string(i);
    late = lane.measure(r);
  }
  EXPECT_EQ(late.status, messages::measure_status::wrong_result);
  EXPECT_EQ(late.finding, "timed_phase");
  EXPECT_NE(late.reason.find("timed phase"), std::string::npos) << late.reason;
}

TEST_F(served_replay_lane_test, a_fault_costs_a_restart_and_the_next_candidate_is_served) {
  served_replay_lane lane(options());
  const auto fault = lane.measure(request(module("fault", "behavior=fault")));
  EXPECT_EQ(fault.status, messages::measure_status::crashed);
  EXPECT_NE(fault.reason.find("FAKE_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << fault.reason;
  const auto right = lane.measure(request(module("right", "")));
  EXPECT_EQ(right.status, messages::measure_status::ok) << right.reason;
  EXPECT_EQ(lane.starts(), 2u);
}

TEST_F(served_replay_lane_test, a_missing_symbol_names_the_fix) {
  served_replay_lane lane(options());
  auto r = request(module("other", ""));
  r.argv.push_back("not_there");
  const auto missing = lane.measure(r);
  EXPECT_EQ(missing.status, messages::measure_status::launch_failed);
  EXPECT_NE(missing.reason.find("not_there"), std::string::npos) << missing.reason;
  EXPECT_NE(missing.reason.find("parameter list"), std::string::npos) << missing.reason;
}

} // namespace
} // namespace rpl::workers
