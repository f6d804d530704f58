// The replay lane (workers/lanes/replay/) over a stand-in for rpl-replay-cuda (a shell script that
// answers as the real program does, by the candidate's code object): samples on success, the
// regions on a verification failure (wrong_result), the program's words on a failure
// (launch_failed), and the arguments and device it was given. The real program runs in
// tests/gpu/capture_replay_test.cpp.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/lanes/replay/replay_lane.hpp"

namespace rpl::workers {
namespace {

using rpl::testing::temp_dir;

constexpr const char* stand_in = R"sh(#!/bin/sh
# A stand-in for rpl-replay-cuda: CAPTURE --iterations N --warmup W --json-out FILE ...
out=""; code=""; kernel=""
echo "$@" > "$(dirname "$0")/args.txt"
echo "$CUDA_VISIBLE_DEVICES" > "$(dirname "$0")/device.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    --json-out) out=$2; shift 2 ;;
    --code-object) code=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    *) shift ;;
  esac
done
case "$(cat "$code")" in
  wrong) printf '{"verification": {"passed": false, "mode": "bit-exact", "mismatched_regions": [{"base": "0x7f0000200000", "first_offset": 64}]}, "timing": null}' > "$out"; exit 3 ;;
  stray) printf '{"verification": {"passed": true}, "red_zones": {"zones": 2, "bytes": 4096, "violation": {"region": "0x7f0000200000", "side": "after", "offset": 4100, "changed": 4, "phase": "the replayed dispatch", "message": "memory out of bounds: the replayed dispatch wrote byte 4100 of region 0x7f0000200000, past its end (4 bytes of the red zones changed)"}}, "timing": null}' > "$out"; exit 3 ;;
  fail) echo "cuModuleLoadData(code_object.cubin): CUDA_ERROR_INVALID_IMAGE" >&2; exit 1 ;;
  *) printf '{"verification": {"passed": true}, "timing": {"samples_ns": [1000, 1100, 1200]}}' > "$out"; exit 0 ;;
esac
)sh";

class replay_lane_test : public ::testing::Test {
protected:
  void SetUp() override {
    rpl::testing::write_file(dir_ / "rpl-replay-cuda", stand_in);
    ::chmod((dir_ / "rpl-replay-cuda").c_str(), 0755);
    options_.name = "gpu1";
    options_.capture = dir_ / "capture";
    options_.program = dir_ / "rpl-replay-cuda";
    options_.device = 1;
  }

  messages::measure_result measure(const std::string& code, std::vector<std::string> more = {}) {
    rpl::testing::write_file(dir_ / "k.cubin", code);
    messages::measure_request request;
    request.argv = {(dir_ / "k.cubin").string()};
    request.argv.insert(request.argv.end(), more.begin(), more.end());
    request.runs = 3;
    request.warmup = 2;
    replay_lane lane(options_);
    return lane.measure(request);
  }

  temp_dir dir_;
  replay_lane_options options_;
};

TEST_F(replay_lane_test, a_verified_replay_gives_its_samples_on_the_lanes_device) {
  const auto result = measure("good", {"_Z6kernelPf"});
  ASSERT_EQ(result.status, messages::measure_status::ok) << result.reason;
  EXPECT_EQ(result.samples_ns, (std::vector<std::int64_t>{1000, 1100, 1200}));
  EXPECT_EQ(result.lane, "gpu1");
  const auto args = rpl::testing::read_text(dir_ / "args.txt");
  EXPECT_NE(args.find((dir_ / "capture").string() + " --iterations 3 --warmup 2"),
            std::string::npos)
      << args;
  EXPECT_NE(args.find("--code-object " + (dir_ / "k.cubin").string()), std::string::npos);
  EXPECT_NE(args.find("--kernel _Z6kernelPf"), std::string::npos);
  EXPECT_EQ(rpl::testing::read_text(dir_ / "device.txt"), "1\n");
}

TEST_F(replay_lane_test, an_output_unlike_the_capture_is_a_wrong_result_naming_the_region) {
  const auto result = measure("wrong");
  EXPECT_EQ(result.status, messages::measure_status::wrong_result);
  EXPECT_NE(result.reason.find("1 regions unlike the captured after-state (bit-exact), first "
                               "0x7f0000200000 at byte 64"),
            std::string::npos)
      << result.reason;
  EXPECT_TRUE(result.samples_ns.empty());
}

TEST_F(replay_lane_test, a_write_into_the_red_zones_is_out_of_bounds_naming_the_region) {
  const auto result = measure("stray");
  EXPECT_EQ(result.status, messages::measure_status::wrong_result);
  EXPECT_EQ(result.finding, "memory:out_of_bounds");
  EXPECT_NE(result.reason.find("wrote byte 4100 of region 0x7f0000200000, past its end"),
            std::string::npos)
      << result.reason;
}

TEST_F(replay_lane_test, a_replay_that_fails_says_what_the_program_said) {
  const auto result = measure("fail");
  EXPECT_EQ(result.status, messages::measure_status::launch_failed);
  EXPECT_NE(result.reason.find("CUDA_ERROR_INVALID_IMAGE"), std::string::npos) << result.reason;
  options_.program = dir_ / "missing";
  const auto missing = measure("good");
  EXPECT_EQ(missing.status, messages::measure_status::launch_failed);
  EXPECT_FALSE(missing.reason.empty());
}

} // namespace
} // namespace rpl::workers
