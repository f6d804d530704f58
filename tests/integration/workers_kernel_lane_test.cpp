// workers::kernel_lane against its CI stand-in, tests/tools/fake_kernel_lane (the real lane loop
// over a scripted device): answers, the first valid candidate as reference, reference kernels,
// buffers kept across candidates, and every way the lane process can fail (crash, hang, sticky
// fault, refused launch, bad start) with the restart that follows. No GPU involved.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <signal.h>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/scoped_env.hpp"
#include "support/test_support.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/lanes/kernel/sanitizer_pass.hpp"

namespace rpl::workers {
namespace {

namespace fs = std::filesystem;
using messages::kernel_lane_status;
using messages::measure_status;

constexpr std::int32_t elements = 64;

class KernelLane : public ::testing::Test {
protected:
  /// A fake code object with the given kernel lines ("kernel scale factor=2").
  fs::path module(const std::string& name, const std::string& kernels) {
    const fs::path path = dir_ / name;
    testing::write_file(path, "rpl-fake-module\n" + kernels + "\n");
    return path;
  }

  static messages::kernel_launch launch(const std::string& symbol = "scale") {
    messages::kernel_launch l;
    l.symbol = symbol;
    l.grid = {1, 1, 1};
    l.block = {64, 1, 1};
    messages::kernel_arg in;
    in.name = "in";
    in.type = messages::element_type::f32;
    in.count = elements;
    in.init.fill = messages::buffer_fill::random;
    in.init.seed = 7;
    in.init.min = 1.0;
    in.init.max = 2.0;
    messages::kernel_arg out;
    out.name = "out";
    out.count = elements;
    out.output = true;
    out.tolerance = {1e-6, 1e-6};
    messages::kernel_arg n;
    n.name = "n";
    n.kind = messages::kernel_arg_kind::scalar;
    n.type = messages::element_type::i32;
    n.int_value = elements;
    l.args = {in, out, n};
    return l;
  }

  static messages::measure_request request(const fs::path& code_object,
                                           messages::kernel_launch l = launch()) {
    messages::measure_request r;
    r.candidate_key = code_object.filename().string();
    r.argv = {code_object.string()};
    r.runs = 4;
    r.warmup = 2;
    r.timeout_ms = 3000;
    r.launch = std::move(l);
    return r;
  }

  static kernel_lane_options options() {
    kernel_lane_options o;
    o.name = "gpu3";
    o.program = RPL_FAKE_KERNEL_LANE;
    o.device = 3;
    o.start_timeout = std::chrono::seconds(10);
    o.reply_allowance = std::chrono::milliseconds(500);
    return o;
  }

  testing::temp_dir dir_;
};

TEST_F(KernelLane, answers_with_one_event_sample_per_run) {
  kernel_lane lane(options());
  const auto result = lane.measure(request(module("a", "kernel scale factor=2 duration_us=250")));
  ASSERT_EQ(result.status, measure_status::ok) << result.reason;
  EXPECT_EQ(result.samples_ns, (std::vector<std::int64_t>{250000, 250000, 250000, 250000}));
  EXPECT_EQ(result.lane, "gpu3");
  EXPECT_EQ(lane.last_reply().warmup_launches, 2u);
  EXPECT_FALSE(lane.last_reply().verified) << "the first candidate is the reference";
  EXPECT_EQ(lane.device().name, "Fake GPU (CUDA_VISIBLE_DEVICES=3)");
  EXPECT_EQ(result.device_model, "Fake GPU (CUDA_VISIBLE_DEVICES=3)");
  EXPECT_EQ(result.device_uuid, "GPU-00000000-0000-0000-0000-00000000fa4e");
  EXPECT_EQ(lane.last_reply().device.sm_clock_khz, 1'000'000);
  EXPECT_EQ(lane.starts(), 1u);
}

TEST_F(KernelLane, samples_adaptively_inside_the_lane_in_one_request) {
  kernel_lane_options o = options();
  stages::sampling_target target;
  target.max_noise = 0.005;
  target.min_samples = 10;
  target.min_time_s = 0.005; // 20 samples of 250 us, then the first one past it
  o.sampling = target;
  kernel_lane lane(o);
  const fs::path a = module("a", "kernel scale factor=2 duration_us=250");
  const auto result = lane.measure(request(a));
  ASSERT_EQ(result.status, measure_status::ok) << result.reason;
  EXPECT_EQ(result.sampling, "converged");
  EXPECT_FALSE(result.noisy);
  EXPECT_EQ(result.noise, 0.0);
  EXPECT_EQ(result.samples_ns.size(), 26u) << "10, then batches of 8 up to the one holding #21";
  EXPECT_EQ(lane.last_reply().sequence, 1u) << "one request for the whole candidate";

  auto fixed = request(a);
  fixed.fixed_count = true; // the final round asks for exactly `runs`
  const auto again = lane.measure(fixed);
  ASSERT_EQ(again.status, measure_status::ok) << again.reason;
  EXPECT_EQ(again.samples_ns.size(), 4u);
  EXPECT_EQ(again.sampling, "fixed");
}

TEST_F(KernelLane, a_candidate_shown_slower_than_the_best_is_raced_after_six_samples) {
  kernel_lane_options o = options();
  stages::sampling_target target;
  target.max_noise = 0.005;
  target.min_samples = 4;
  target.min_time_s = 0.005;
  o.sampling = target;
  o.race = std::make_shared<race_board>();
  kernel_lane lane(o);
  const auto best = lane.measure(request(module("a", "kernel scale factor=2 duration_us=250")));
  ASSERT_EQ(best.status, measure_status::ok) << best.reason;
  EXPECT_EQ(best.sampling, "converged") << "nothing to race against yet";
  EXPECT_EQ(best.interval_low_ns, 250000.0);
  EXPECT_EQ(best.interval_high_ns, 250000.0);
  EXPECT_EQ(o.race->current().high_ns, 250000.0);

  // 4 % slower: out after the six samples a 95 % interval needs, with its interval and the bound.
  const auto slow = lane.measure(request(module("b", "kernel scale factor=2 duration_us=260")));
  ASSERT_EQ(slow.status, measure_status::ok) << slow.reason;
  EXPECT_EQ(slow.sampling, "raced");
  EXPECT_EQ(slow.samples_ns.size(), 6u);
  EXPECT_FALSE(slow.noisy);
  EXPECT_EQ(slow.interval_low_ns, 260000.0);
  EXPECT_EQ(slow.race_bound_ns, 250000.0);
  EXPECT_TRUE(lane.last_reply().verified) << "a raced candidate's outputs were still checked";

  // 0.4 % slower is inside the 0.5 % separating noise: it could tie, so it is sampled on.
  const auto close = lane.measure(request(module("c", "kernel scale factor=2 duration_us=251")));
  ASSERT_EQ(close.status, measure_status::ok) << close.reason;
  EXPECT_EQ(close.sampling, "converged");
  EXPECT_GT(close.samples_ns.size(), 6u);
  EXPECT_EQ(close.race_bound_ns, 0.0);

  // A faster one lowers the bound; the final round's fixed counts are never raced.
  ASSERT_EQ(lane.measure(request(module("d", "kernel scale factor=2 duration_us=200"))).sampling,
            "converged");
  EXPECT_EQ(o.race->current().high_ns, 200000.0);
  auto fixed = request(dir_ / "b");
  fixed.fixed_count = true;
  const auto again = lane.measure(fixed);
  EXPECT_EQ(again.sampling, "fixed");
  EXPECT_EQ(again.samples_ns.size(), 4u);
  EXPECT_TRUE(lane.last_reply().module_cached) << "b was loaded before";
}

TEST_F(KernelLane, a_wrong_result_found_during_sampling_drops_the_samples) {
  kernel_lane lane(options());
  ASSERT_EQ(lane.measure(request(module("a", "kernel scale factor=2"))).status, measure_status::ok);
  const auto wrong = lane.measure(request(module("b", "kernel scale factor=3")));
  EXPECT_EQ(wrong.status, measure_status::wrong_result);
  EXPECT_TRUE(wrong.samples_ns.empty()) << "the samples of a wrong kernel are not kept";
  EXPECT_NE(wrong.reason.find("wrong result: out["), std::string::npos) << wrong.reason;
  // The same path with other contents is loaded afresh, not taken from the module cache.
  testing::write_file(dir_ / "b", "rpl-fake-module\nkernel scale factor=2.0\n");
  const auto fixed = lane.measure(request(dir_ / "b"));
  EXPECT_EQ(fixed.status, measure_status::ok) << fixed.reason;
  EXPECT_FALSE(lane.last_reply().module_cached);
}

TEST_F(KernelLane, a_write_past_the_end_with_right_outputs_is_out_of_bounds) {
  kernel_lane lane(options());
  auto l = launch();
  l.reference = messages::kernel_reference{"", "reference", {1, 1, 1}, {64, 1, 1}, 0};
  const auto wrong = lane.measure(request(
      module("a", "kernel reference factor=2\nkernel scale factor=2 behavior=oob_write"), l));
  EXPECT_EQ(wrong.status, measure_status::wrong_result) << wrong.reason;
  EXPECT_EQ(wrong.finding, "memory:out_of_bounds");
  const auto& v = lane.last_reply().violation;
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::out_of_bounds);
  EXPECT_EQ(v.buffer, "out");
  EXPECT_EQ(v.side, "after");
  EXPECT_EQ(v.offset, elements * 4) << "the first byte past the end";
  EXPECT_EQ(v.changed, 4u) << "one float";
  EXPECT_EQ(v.phase, "the checked launch");
  EXPECT_NE(wrong.reason.find("memory out of bounds: the checked launch wrote byte 256 of buffer "
                              "out, past its end"),
            std::string::npos)
      << wrong.reason;
  EXPECT_TRUE(wrong.samples_ns.empty());
  EXPECT_TRUE(lane.last_reply().red_zones);

  // Before the start, found by the timed launches' check where no checked launch compared.
  const auto before = lane.measure(request(
      module("b", "kernel reference factor=2\nkernel scale factor=2 behavior=oob_before"), l));
  EXPECT_EQ(before.finding, "memory:out_of_bounds") << before.reason;
  EXPECT_EQ(lane.last_reply().violation.side, "before");
  EXPECT_EQ(lane.last_reply().violation.offset, -4);

  // The zones were filled again: a right kernel passes in the same process.
  const auto right =
      lane.measure(request(module("c", "kernel reference factor=2\nkernel scale factor=2"), l));
  EXPECT_EQ(right.status, measure_status::ok) << right.reason;
  EXPECT_EQ(right.finding, "");
  EXPECT_EQ(lane.starts(), 1u);
}

TEST_F(KernelLane, without_a_checked_launch_the_timed_launches_are_checked_for_red_zones) {
  kernel_lane lane(options());
  const auto wrong = lane.measure(request(module("a", "kernel scale factor=2 behavior=oob_write")));
  EXPECT_EQ(wrong.finding, "memory:out_of_bounds") << wrong.reason;
  EXPECT_EQ(lane.last_reply().violation.phase, "the checked launch");
}

TEST_F(KernelLane, red_zones_can_be_turned_off_for_a_sanitizer) {
  auto o = options();
  o.program_args = {"--no-red-zones"};
  kernel_lane lane(o);
  const auto ok = lane.measure(request(module("a", "kernel scale factor=2")));
  EXPECT_EQ(ok.status, measure_status::ok) << ok.reason;
  EXPECT_FALSE(lane.last_reply().red_zones);
}

TEST_F(KernelLane, a_strict_request_finds_an_input_written_and_outputs_that_drift) {
  kernel_lane lane(options());
  auto l = launch();
  l.reference = messages::kernel_reference{"", "reference", {1, 1, 1}, {64, 1, 1}, 0};
  l.strict = true;
  const auto ok =
      lane.measure(request(module("a", "kernel reference factor=2\nkernel scale factor=2"), l));
  ASSERT_EQ(ok.status, measure_status::ok) << ok.reason;

  const auto written = lane.measure(request(
      module("b", "kernel reference factor=2\nkernel scale factor=2 behavior=write_input"), l));
  EXPECT_EQ(written.status, measure_status::wrong_result) << written.reason;
  EXPECT_EQ(written.finding, "inputs_modified");
  EXPECT_EQ(lane.last_reply().mismatch.buffer, "in");
  EXPECT_EQ(lane.last_reply().mismatch.index, 0u);
  EXPECT_EQ(lane.last_reply().mismatch.count, 1u);
  EXPECT_NE(written.reason.find("mark it \"output\": true"), std::string::npos) << written.reason;

  const std::string drifting =
      "kernel reference factor=2\nkernel scale factor=2 behavior=nondeterministic";
  const auto drift = lane.measure(request(module("c", drifting), l));
  EXPECT_EQ(drift.finding, "nondeterministic") << drift.reason;
  EXPECT_EQ(lane.last_reply().mismatch.index, 0u);
  EXPECT_NE(drift.reason.find("\"nondeterministic\": true"), std::string::npos) << drift.reason;

  // Allowed with a tolerance wider than the drift, the determinism check passes; the comparison
  // with the reference still sees the drift, which the output's tolerance must then cover.
  l.args[1].nondeterministic = true;
  l.args[1].tolerance = {0.1, 0.0};
  const auto allowed = lane.measure(request(module("d", drifting), l));
  EXPECT_EQ(allowed.status, measure_status::ok) << allowed.reason;

  // Not strict: neither check runs (the throughput path of a sweep).
  l.strict = false;
  l.args[1].nondeterministic = false;
  l.args[1].tolerance = {1e-6, 1e-6};
  const auto loose = lane.measure(request(
      module("e", "kernel reference factor=2\nkernel scale factor=2 behavior=write_input"), l));
  EXPECT_EQ(loose.status, measure_status::ok) << loose.reason;
}

TEST_F(KernelLane, buffers_offset_by_four_bytes_keep_their_red_zones) {
  kernel_lane lane(options());
  auto l = launch();
  l.reference = messages::kernel_reference{"", "reference", {1, 1, 1}, {64, 1, 1}, 0};
  l.offset_bytes = 4;
  const auto ok =
      lane.measure(request(module("a", "kernel reference factor=2\nkernel scale factor=2"), l));
  ASSERT_EQ(ok.status, measure_status::ok) << ok.reason;
  const auto wrong = lane.measure(request(
      module("b", "kernel reference factor=2\nkernel scale factor=2 behavior=oob_write"), l));
  EXPECT_EQ(wrong.finding, "memory:out_of_bounds") << wrong.reason;
  EXPECT_EQ(lane.last_reply().violation.offset, elements * 4);
  l.offset_bytes = 0; // back to aligned: the zone bytes the buffer held are pattern again
  const auto back =
      lane.measure(request(module("c", "kernel reference factor=2\nkernel scale factor=2"), l));
  EXPECT_EQ(back.status, measure_status::ok) << back.reason;
  l.offset_bytes = 4096;
  const auto refused = lane.measure(request(dir_ / "c", l));
  EXPECT_NE(refused.reason.find("offset_bytes 4096 is over the lane's 256"), std::string::npos)
      << refused.reason;
}

TEST_F(KernelLane, the_sanitizer_pass_runs_each_tool_on_a_lane_without_red_zones) {
  const fs::path script =
      fs::path(RPL_SOURCE_DIR) / "tests" / "tools" / "fake_compute_sanitizer.sh";
  const fs::path args = dir_ / "args.txt";
  testing::scoped_env sanitizer("RPL_COMPUTE_SANITIZER", script.c_str());
  testing::scoped_env record("FAKE_SANITIZER_ARGS", args.c_str());
  testing::scoped_env report("FAKE_SANITIZER_REPORT", nullptr);
  auto o = options();
  o.sanitizer_log_dir = dir_ / "logs";
  kernel_lane lane(o);
  auto l = launch();
  l.reference = messages::kernel_reference{"", "reference", {1, 1, 1}, {64, 1, 1}, 0};
  const fs::path code = module("a.cubin", "kernel reference factor=2\nkernel scale factor=2");
  std::string unavailable;
  const auto clean = lane.sanitize({{request(code, l)}, {}}, unavailable);
  ASSERT_EQ(clean.size(), 4u) << unavailable;
  for (std::size_t i = 0; i < clean.size(); ++i) {
    EXPECT_EQ(clean[i].tool, sanitizer_tools[i]);
    EXPECT_TRUE(clean[i].clean) << clean[i].tool << ": " << clean[i].first_report;
    EXPECT_EQ(clean[i].log, dir_ / "logs" / ("a.cubin." + clean[i].tool + ".log"));
    EXPECT_TRUE(fs::exists(clean[i].log));
  }
  const std::string passed = testing::read_text(args);
  EXPECT_NE(passed.find("--no-red-zones"), std::string::npos) << passed;
  EXPECT_NE(passed.find("--error-exitcode\n86"), std::string::npos) << passed;
  EXPECT_NE(passed.find(RPL_FAKE_KERNEL_LANE), std::string::npos) << passed;

  testing::scoped_env racy("FAKE_SANITIZER_REPORT", "racecheck");
  const auto found = lane.sanitize({{request(code, l)}, {}}, unavailable);
  ASSERT_EQ(found.size(), 2u) << "memcheck clean, racecheck reports: the rest need not run";
  EXPECT_TRUE(found[0].clean);
  EXPECT_FALSE(found[1].clean);
  EXPECT_EQ(found[1].first_report,
            "Error: Race reported between Write access at rpl_k+0x1a0 in k.cu:12");

  testing::scoped_env missing("RPL_COMPUTE_SANITIZER", (dir_ / "no-such-tool").c_str());
  const auto none = lane.sanitize({{request(code, l)}, {}}, unavailable);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_FALSE(none[0].clean) << "a tool that cannot start is no evidence";
  EXPECT_NE(none[0].first_report.find("could not start"), std::string::npos)
      << none[0].first_report;
}

TEST_F(KernelLane, the_hip_lane_has_no_sanitizer_pass_and_says_so) {
  auto o = options();
  o.visible_devices_variable = "HIP_VISIBLE_DEVICES";
  kernel_lane lane(o);
  std::string unavailable;
  EXPECT_TRUE(lane.sanitize({{request(module("a", "kernel scale"))}, {}}, unavailable).empty());
  EXPECT_NE(unavailable.find("AMD"), std::string::npos) << unavailable;
}

TEST(SanitizerReport, the_first_report_line_skips_banner_summaries_and_details) {
  EXPECT_EQ(first_sanitizer_report("========= COMPUTE-SANITIZER\n"
                                   "========= Invalid __global__ write of size 4 bytes\n"
                                   "=========     at rpl_sgemm_tiled+0x1c0\n"
                                   "=========     by thread (0,0,0) in block (0,0,0)\n"
                                   "========= ERROR SUMMARY: 1 error\n"),
            "Invalid __global__ write of size 4 bytes at rpl_sgemm_tiled+0x1c0");
  EXPECT_EQ(
      first_sanitizer_report("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"),
      "");
  EXPECT_EQ(first_sanitizer_report("program output\n"), "");
}

TEST_F(KernelLane, a_spot_check_in_the_timed_launches_finds_a_kernel_that_works_less_unchecked) {
  kernel_lane lane(options());
  auto l = launch();
  l.reference = messages::kernel_reference{"", "reference", {1, 1, 1}, {64, 1, 1}, 0};
  auto r = request(module("a", "kernel reference factor=2\nkernel scale factor=2"), l);
  r.spot_checks = 1;
  r.fixed_count = true;
  const auto honest = lane.measure(r);
  ASSERT_EQ(honest.status, measure_status::ok) << honest.reason;
  EXPECT_EQ(honest.samples_ns.size(), 4u) << "the spot-checked launch is not a sample";
  EXPECT_EQ(lane.last_reply().spot_samples_ns, (std::vector<std::int64_t>{100000}));
  EXPECT_EQ(lane.last_reply().warmup_launches, 2u);

  // Skips the work when `out` already holds its result: right in every check from fresh
  // buffers, 100x faster in the timed launches that follow.
  auto lazy =
      request(module("b", "kernel reference factor=2\nkernel scale factor=2 behavior=lazy"), l);
  lazy.spot_checks = 1;
  lazy.fixed_count = true;
  const auto caught = lane.measure(lazy);
  EXPECT_EQ(caught.finding, "timed_phase") << caught.reason;
  EXPECT_NE(caught.reason.find("took 100 us, the other timed launches 1 us"), std::string::npos)
      << caught.reason;
  lazy.spot_checks = 0;
  EXPECT_EQ(lane.measure(lazy).status, measure_status::ok) << "without a spot check it passes";

  // Wrong only from its fifth launch on: after the checked launch and the first timed ones.
  auto late = request(
      module("c", "kernel reference factor=2\nkernel scale factor=2 behavior=wrong_late"), l);
  late.spot_checks = 1;
  late.fixed_count = true;
  late.runs = 8;
  kernel_lane fresh(options()); // the fake counts launches per process
  const auto wrong = fresh.measure(late);
  EXPECT_EQ(wrong.finding, "timed_phase") << wrong.reason;
  EXPECT_NE(wrong.reason.find("a spot-checked timed launch (buffers restored) was wrong"),
            std::string::npos)
      << wrong.reason;
}

TEST_F(KernelLane, keeps_its_buffers_across_candidates) {
  kernel_lane lane(options());
  ASSERT_EQ(lane.measure(request(module("a", "kernel scale factor=2"))).status, measure_status::ok);
  EXPECT_EQ(lane.last_reply().allocations, 3u) << "two buffers and the input's device copy";
  const pid_t pid = lane.process_id();
  ASSERT_EQ(lane.measure(request(module("b", "kernel scale factor=2"))).status, measure_status::ok);
  EXPECT_EQ(lane.last_reply().allocations, 0u) << "the steady state allocates nothing";
  EXPECT_EQ(lane.process_id(), pid) << "no process start per candidate";
}

TEST_F(KernelLane, the_first_valid_candidate_defines_the_right_outputs) {
  kernel_lane lane(options());
  ASSERT_EQ(lane.measure(request(module("a", "kernel scale factor=2"))).status, measure_status::ok);
  ASSERT_TRUE(lane.first_valid());
  EXPECT_EQ(lane.first_valid()->code_object_path, (dir_ / "a").string());

  const auto wrong = lane.measure(request(module("b", "kernel scale factor=3")));
  EXPECT_EQ(wrong.status, measure_status::wrong_result);
  EXPECT_NE(wrong.reason.find("wrong_result: wrong result: out[0] = "), std::string::npos)
      << wrong.reason;
  EXPECT_NE(wrong.reason.find("64 of 64 elements differ"), std::string::npos) << wrong.reason;
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::wrong_result);
  EXPECT_EQ(lane.last_reply().mismatch.buffer, "out");
  EXPECT_NEAR(lane.last_reply().mismatch.value / lane.last_reply().mismatch.expected, 1.5, 1e-6);
  EXPECT_TRUE(wrong.samples_ns.empty()) << "a wrong candidate is not timed";

  const auto right = lane.measure(request(module("c", "kernel scale factor=2")));
  EXPECT_EQ(right.status, measure_status::ok) << right.reason;
  EXPECT_TRUE(lane.last_reply().verified);
}

TEST_F(KernelLane, a_reference_kernel_from_the_candidates_code_object_checks_every_candidate) {
  kernel_lane lane(options());
  auto l = launch();
  l.reference = messages::kernel_reference{"", "reference", {1, 1, 1}, {64, 1, 1}, 0};
  const auto ok =
      lane.measure(request(module("a", "kernel reference factor=2\nkernel scale factor=2"), l));
  ASSERT_EQ(ok.status, measure_status::ok) << ok.reason;
  EXPECT_TRUE(lane.last_reply().verified);
  EXPECT_FALSE(lane.first_valid()) << "a named reference replaces the first-valid rule";
  const auto wrong =
      lane.measure(request(module("b", "kernel reference factor=2\nkernel scale factor=2.5"), l));
  EXPECT_EQ(wrong.status, measure_status::wrong_result) << wrong.reason;
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::wrong_result);
}

TEST_F(KernelLane, a_reference_kernel_in_its_own_code_object_checks_every_candidate) {
  kernel_lane lane(options());
  auto l = launch();
  l.reference = messages::kernel_reference{
      module("ref", "kernel naive factor=2").string(), "naive", {1, 1, 1}, {64, 1, 1}, 0};
  EXPECT_EQ(lane.measure(request(module("a", "kernel scale factor=2"), l)).status,
            measure_status::ok);
  EXPECT_TRUE(lane.last_reply().verified);
  l.reference->symbol = "missing";
  const auto failed = lane.measure(request(module("b", "kernel scale factor=2"), l));
  EXPECT_EQ(failed.status, measure_status::launch_failed);
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::reference_failed);
  EXPECT_NE(failed.reason.find("the reference kernel missing: FAKE_ERROR_NOT_FOUND"),
            std::string::npos)
      << failed.reason;
}

TEST_F(KernelLane, a_crash_is_reported_and_the_next_candidate_gets_a_fresh_process) {
  kernel_lane lane(options());
  const auto crashed = lane.measure(request(module("a", "kernel scale behavior=crash")));
  EXPECT_EQ(crashed.status, measure_status::crashed);
  EXPECT_NE(crashed.reason.find("died while measuring this candidate"), std::string::npos)
      << crashed.reason;
  EXPECT_NE(crashed.reason.find("SIGSEGV"), std::string::npos) << crashed.reason;
  EXPECT_NE(crashed.reason.find("a fresh one serves the next candidate"), std::string::npos);
  const auto next = lane.measure(request(module("b", "kernel scale")));
  EXPECT_EQ(next.status, measure_status::ok) << next.reason;
  EXPECT_EQ(lane.starts(), 2u);
}

TEST_F(KernelLane, a_hung_kernel_times_out_and_the_lane_restarts) {
  kernel_lane lane(options());
  auto hung = request(module("a", "kernel scale behavior=hang"));
  hung.timeout_ms = 200;
  const auto begin = std::chrono::steady_clock::now();
  const auto result = lane.measure(hung);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  EXPECT_EQ(result.status, measure_status::timed_out);
  EXPECT_NE(result.reason.find("gave no answer within 700 ms"), std::string::npos) << result.reason;
  EXPECT_EQ(lane.process_id(), -1) << "the hung process is gone";
  EXPECT_EQ(lane.measure(request(module("b", "kernel scale"))).status, measure_status::ok);
  EXPECT_EQ(lane.starts(), 2u);
}

TEST_F(KernelLane, a_sticky_fault_is_answered_then_the_lane_restarts) {
  kernel_lane lane(options());
  const auto fault = lane.measure(request(module("a", "kernel scale behavior=fault")));
  EXPECT_EQ(fault.status, measure_status::crashed);
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::kernel_fault);
  EXPECT_EQ(lane.last_reply().error_name, "FAKE_ERROR_ILLEGAL_ADDRESS");
  EXPECT_TRUE(lane.last_reply().lane_exiting);
  EXPECT_NE(fault.reason.find("exited with status 4"), std::string::npos) << fault.reason;
  EXPECT_EQ(lane.process_id(), -1);
  EXPECT_EQ(lane.measure(request(module("b", "kernel scale"))).status, measure_status::ok);
  EXPECT_EQ(lane.starts(), 2u);
}

TEST_F(KernelLane, ordinary_failures_keep_the_process) {
  kernel_lane lane(options());
  ASSERT_EQ(lane.measure(request(module("ok", "kernel scale"))).status, measure_status::ok);
  const pid_t pid = lane.process_id();

  const auto missing = lane.measure(request(module("a", "kernel other")));
  EXPECT_EQ(missing.status, measure_status::launch_failed);
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::symbol_not_found);
  EXPECT_NE(missing.reason.find("FAKE_ERROR_NOT_FOUND"), std::string::npos) << missing.reason;

  const auto refused = lane.measure(request(module("b", "kernel scale behavior=launch_error")));
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::launch_failed) << refused.reason;
  EXPECT_EQ(lane.last_reply().error_name, "FAKE_ERROR_LAUNCH_OUT_OF_RESOURCES");

  testing::write_file(dir_ / "garbage", "\x7f"
                                        "ELF not a module");
  EXPECT_EQ(lane.measure(request(dir_ / "garbage")).status, measure_status::launch_failed);
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::load_failed);

  const auto unreadable = lane.measure(request(dir_ / "does-not-exist"));
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::bad_request);
  EXPECT_NE(unreadable.reason.find("cannot read the code object"), std::string::npos);

  EXPECT_EQ(lane.process_id(), pid);
  EXPECT_EQ(lane.starts(), 1u);
}

TEST_F(KernelLane, a_request_without_a_launch_says_how_to_give_one) {
  kernel_lane lane(options());
  auto r = request(module("a", "kernel scale"));
  r.launch.reset();
  const auto result = lane.measure(r);
  EXPECT_EQ(result.status, measure_status::launch_failed);
  EXPECT_NE(result.reason.find("--launch FILE"), std::string::npos) << result.reason;
  EXPECT_EQ(lane.starts(), 0u);
}

TEST_F(KernelLane, a_lane_that_died_between_candidates_is_replaced_quietly) {
  kernel_lane lane(options());
  ASSERT_EQ(lane.measure(request(module("a", "kernel scale"))).status, measure_status::ok);
  ASSERT_GT(lane.process_id(), 0);
  ::kill(lane.process_id(), SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto next = lane.measure(request(module("b", "kernel scale")));
  EXPECT_EQ(next.status, measure_status::ok) << next.reason;
  EXPECT_EQ(lane.starts(), 2u);
}

/// One measure() with FAKE_KERNEL_LANE_START=`how`; the lane never got going.
messages::measure_result
failed_start(const std::string& how, const fs::path& code_object, kernel_lane_options o) {
  o.environment.emplace_back("FAKE_KERNEL_LANE_START", how);
  o.start_timeout = std::chrono::milliseconds(300);
  kernel_lane lane(std::move(o));
  messages::measure_request r;
  r.argv = {code_object.string()};
  r.timeout_ms = 1000;
  r.launch = messages::kernel_launch{};
  const auto result = lane.measure(r);
  EXPECT_EQ(lane.process_id(), -1) << how;
  return result;
}

TEST_F(KernelLane, a_lane_that_cannot_start_says_why) {
  const fs::path code = module("a", "kernel scale");
  const auto no_device = failed_start("no_device", code, options());
  EXPECT_EQ(no_device.status, measure_status::launch_failed);
  EXPECT_NE(no_device.reason.find("no usable GPU: device 0 cannot be used: FAKE_ERROR_NO_DEVICE"),
            std::string::npos)
      << no_device.reason;
  const auto crash = failed_start("crash", code, options());
  EXPECT_NE(crash.reason.find("ended before its hello and was killed by SIGABRT"),
            std::string::npos)
      << crash.reason;
  const auto hang = failed_start("hang", code, options());
  EXPECT_NE(hang.reason.find("did not say hello within 300 ms"), std::string::npos) << hang.reason;
  const auto garbage = failed_start("garbage", code, options());
  EXPECT_NE(garbage.reason.find("wrote something that is not a frame"), std::string::npos)
      << garbage.reason;

  kernel_lane_options missing = options();
  missing.program = dir_ / "no-such-lane";
  kernel_lane lane(missing);
  const auto result = lane.measure(request(code));
  EXPECT_EQ(result.status, measure_status::launch_failed);
  EXPECT_NE(result.reason.find("could not be started: execvp"), std::string::npos) << result.reason;
}

TEST_F(KernelLane, the_device_index_can_go_as_an_argument_instead) {
  kernel_lane_options o = options();
  o.visible_devices_variable.clear();
  o.device = 0;
  o.environment.emplace_back("CUDA_VISIBLE_DEVICES", std::nullopt);
  kernel_lane lane(o);
  EXPECT_EQ(lane.measure(request(module("a", "kernel scale"))).status, measure_status::ok);
  EXPECT_EQ(lane.device().name, "Fake GPU (CUDA_VISIBLE_DEVICES=)");
}

#ifdef RPL_KERNEL_LANE_HIP
// The HIP variant runs here (Debian's libamdhip64) though no AMD GPU does: it must say so in its
// hello rather than crash, hang or corrupt the stream.
TEST_F(KernelLane, the_hip_lane_without_an_amd_gpu_says_there_is_none) {
  kernel_lane_options o = options();
  o.program = RPL_KERNEL_LANE_HIP;
  o.visible_devices_variable = "HIP_VISIBLE_DEVICES";
  o.device = 0;
  kernel_lane lane(o);
  const auto result = lane.measure(request(module("a", "kernel scale")));
  if (result.status == measure_status::launch_failed &&
      result.reason.find("no usable GPU") == std::string::npos)
    FAIL() << "the HIP lane did not answer with a hello: " << result.reason;
  EXPECT_EQ(result.status, measure_status::launch_failed) << result.reason;
  EXPECT_EQ(lane.device().api, "hip");
}
#endif

#ifdef RPL_KERNEL_LANE
// Without an NVIDIA driver the CUDA lane cannot even load (libcuda.so.1); the reason says so.
TEST_F(KernelLane, the_cuda_lane_without_a_gpu_fails_with_a_clear_reason) {
  if (fs::exists("/dev/nvidia0") || fs::exists("/proc/driver/nvidia"))
    GTEST_SKIP() << "an NVIDIA driver is present: tests/gpu/kernel_lane_test.cpp covers this lane";
  kernel_lane_options o = options();
  o.program = RPL_KERNEL_LANE;
  kernel_lane lane(o);
  const auto result = lane.measure(request(module("a", "kernel scale")));
  EXPECT_EQ(result.status, measure_status::launch_failed);
  const bool clear = result.reason.find("libcuda") != std::string::npos ||
                     result.reason.find("no usable GPU") != std::string::npos;
  EXPECT_TRUE(clear) << result.reason;
}
#endif

} // namespace
} // namespace rpl::workers
