// workers/lanes/trace/: the trace-timed application lane over the rocprofv3 recorder and its test
// stand-in (tests/tools/fake_rocprofv3.cpp), which runs the application for real and records, per
// process, FAKE_ROCPROF_DISPATCHES dispatches each of gemm_tile (400 us + 100 ns * i),
// reduce_sum (50 us + 100 ns * i) and __amd_rocclr_fillBufferAligned, scaled by a per-pid jitter.
// The expected samples are read back from the kept traces, independently of the lane.

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "stages/trace/rocpd_reader.hpp"
#include "support/scoped_env.hpp"
#include "support/test_support.hpp"
#include "workers/lanes/trace/trace_lane.hpp"

namespace rpl::workers {
namespace {

using namespace std::chrono_literals;
using messages::measure_status;
using rpl::testing::scoped_env;
using rpl::testing::temp_dir;

trace_lane_options fake_options(const std::filesystem::path& work, std::string regex) {
  trace_lane_options options;
  options.name = "gpu0";
  options.make_recorder =
      rocprofv3_recorder_factory({.executable = RPL_FAKE_ROCPROFV3, .timeout = 60s});
  options.kernel_regex = std::move(regex);
  options.work_folder = work;
  options.keep_traces = true;
  return options;
}

messages::measure_request
request(std::vector<std::string> argv, std::uint32_t runs, std::uint32_t warmup = 0) {
  messages::measure_request r;
  r.candidate_key = "BLOCK=64";
  r.argv = std::move(argv);
  r.runs = runs;
  r.warmup = warmup;
  r.timeout_ms = 30000;
  return r;
}

/// Durations of `kernel` in one run's kept trace, by start time.
std::vector<std::int64_t> traced_durations(const std::filesystem::path& run_folder,
                                           const std::string& kernel) {
  std::vector<std::pair<std::int64_t, std::int64_t>> rows;
  stages::rocpd::reader::open({run_folder}).for_each_dispatch([&](const auto& row) {
    if (row.kernel_name == kernel) {
      rows.emplace_back(row.start_ns, row.end_ns - row.start_ns);
    }
  });
  std::sort(rows.begin(), rows.end());
  std::vector<std::int64_t> durations;
  for (const auto& [start, duration] : rows) {
    durations.push_back(duration);
  }
  return durations;
}

std::int64_t median_of(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1] + 1) / 2;
}

const std::string gemm = "gemm_tile(float const*, float const*, float*, int)";
const std::string reduce = "reduce_sum(float*, int)";

TEST(workers_trace_lane, samples_are_the_traced_durations_less_the_warmup_dispatch) {
  temp_dir dir;
  trace_lane lane(fake_options(dir.path(), "gemm"));
  const auto result = lane.measure(request({"/bin/true"}, 2));
  ASSERT_EQ(result.status, measure_status::ok) << result.reason;
  EXPECT_TRUE(result.reason.empty());
  EXPECT_EQ(result.lane, "gpu0");
  EXPECT_EQ(result.failed_run, -1);
  std::vector<std::int64_t> expected;
  for (const char* run : {"run-0", "run-1"}) {
    const auto traced = traced_durations(dir / "1-BLOCK_64" / run, gemm);
    ASSERT_EQ(traced.size(), 10u);
    expected.insert(expected.end(), traced.begin() + 1, traced.end()); // first one is warm-up
  }
  EXPECT_EQ(result.samples_ns, expected);
  for (const std::int64_t sample : result.samples_ns) {
    EXPECT_GT(sample, 390000); // gemm_tile's 400 us, not the process's wall time
    EXPECT_LT(sample, 420000);
  }
}

TEST(workers_trace_lane, warmup_dispatches_and_warmup_runs_are_dropped) {
  temp_dir dir;
  scoped_env dispatches("FAKE_ROCPROF_DISPATCHES", "6");
  auto options = fake_options(dir.path(), "reduce_sum");
  options.warmup_dispatches = 4;
  trace_lane lane(std::move(options));
  const auto result = lane.measure(request({"/bin/true"}, 3, 2));
  ASSERT_EQ(result.status, measure_status::ok) << result.reason;
  ASSERT_EQ(result.samples_ns.size(), 3u * 2u); // 6 dispatches, 4 warm-up, 3 timed runs
  EXPECT_TRUE(std::filesystem::exists(dir / "1-BLOCK_64" / "warm-up-2"));
  const auto traced = traced_durations(dir / "1-BLOCK_64" / "run-2", reduce);
  EXPECT_EQ(std::vector<std::int64_t>(result.samples_ns.end() - 2, result.samples_ns.end()),
            std::vector<std::int64_t>(traced.begin() + 4, traced.end()));
}

TEST(workers_trace_lane, several_kernels_give_one_sample_per_run_the_sum_of_medians) {
  temp_dir dir;
  for (const std::string& regex : {std::string(""), std::string("gemm_tile|reduce")}) {
    trace_lane lane(fake_options(dir / ("r" + std::to_string(regex.size())), regex));
    const auto result = lane.measure(request({"/bin/true"}, 2));
    ASSERT_EQ(result.status, measure_status::ok) << result.reason;
    EXPECT_TRUE(result.reason.empty());
    ASSERT_EQ(result.samples_ns.size(), 2u) << "regex '" << regex << "'";
    for (std::size_t run = 0; run < 2; ++run) {
      const auto folder = dir / ("r" + std::to_string(regex.size())) / "1-BLOCK_64" /
                          ("run-" + std::to_string(run));
      auto g = traced_durations(folder, gemm);
      auto r = traced_durations(folder, reduce);
      // The runtime helper is in the trace but never counts.
      EXPECT_EQ(traced_durations(folder, "__amd_rocclr_fillBufferAligned").size(), 10u);
      const std::int64_t expected =
          median_of({g.begin() + 1, g.end()}) + median_of({r.begin() + 1, r.end()});
      EXPECT_EQ(result.samples_ns[run], expected) << "regex '" << regex << "', run " << run;
    }
  }
}

TEST(workers_trace_lane, no_match_is_launch_failed_naming_the_regex_and_the_kernels_seen) {
  temp_dir dir;
  trace_lane lane(fake_options(dir.path(), "sgemm"));
  const auto result = lane.measure(request({"/bin/true"}, 3, 1));
  EXPECT_EQ(result.status, measure_status::launch_failed);
  EXPECT_EQ(result.failed_run, -1); // found in the warm-up run, before any timed run
  EXPECT_TRUE(result.samples_ns.empty());
  EXPECT_EQ(result.reason,
            "warm-up 1: --kernel 'sgemm': no dispatch matched; kernels seen: " + gemm + ", " +
                reduce +
                ", __amd_rocclr_fillBufferAligned (runtime helper); fix: pass a --kernel regular "
                "expression (ECMAScript, found anywhere in the name) that matches one of them");
}

TEST(workers_trace_lane, an_empty_trace_asks_for_gpu_kernels) {
  temp_dir dir;
  scoped_env none("FAKE_ROCPROF_NO_DISPATCHES", "1");
  trace_lane lane(fake_options(dir.path(), ""));
  const auto result = lane.measure(request({"/bin/true"}, 1));
  EXPECT_EQ(result.status, measure_status::launch_failed);
  EXPECT_EQ(result.failed_run, 0);
  EXPECT_EQ(result.reason, "run 0: --kernel (every user kernel): no dispatch matched; kernels "
                           "seen: none; fix: check that the application launches its kernels on "
                           "the GPU (runtime helpers never count)");
}

TEST(workers_trace_lane, a_failing_application_is_a_nonzero_exit_with_the_run) {
  temp_dir dir;
  trace_lane lane(fake_options(dir.path(), "gemm"));
  const auto result = lane.measure(request({"/bin/sh", "-c", "echo bad input; exit 3"}, 2));
  EXPECT_EQ(result.status, measure_status::nonzero_exit);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.failed_run, 0);
  EXPECT_TRUE(result.samples_ns.empty());
  EXPECT_EQ(result.reason, "run 0: rocprofv3 exited with status 3; fix: run with --debug to see "
                           "rocprofv3's output\nbad input");
}

TEST(workers_trace_lane, a_crash_under_rocprofv3_reads_as_its_exit_status) {
  temp_dir dir;
  trace_lane lane(fake_options(dir.path(), "gemm"));
  const auto result = lane.measure(request({"/bin/sh", "-c", "kill -SEGV $$"}, 1));
  // rocprofv3 (and its stand-in) exits with 128 + the application's signal.
  EXPECT_EQ(result.status, measure_status::nonzero_exit);
  EXPECT_EQ(result.exit_code, 139);
  EXPECT_EQ(result.failed_run, 0);
}

TEST(workers_trace_lane, a_hanging_application_times_out_in_its_warmup) {
  temp_dir dir;
  trace_lane lane(fake_options(dir.path(), "gemm"));
  auto r = request({"/bin/sleep", "10"}, 2, 1);
  r.timeout_ms = 300;
  const auto started = std::chrono::steady_clock::now();
  const auto result = lane.measure(r);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(result.status, measure_status::timed_out);
  EXPECT_EQ(result.failed_run, -1);
  EXPECT_EQ(result.reason.rfind("warm-up 1: rocprofv3 timed out", 0), 0u) << result.reason;
}

TEST(workers_trace_lane, a_missing_tracer_is_launch_failed) {
  temp_dir dir;
  auto options = fake_options(dir.path(), "gemm");
  options.make_recorder =
      rocprofv3_recorder_factory({.executable = "/nonexistent/rocprofv3", .timeout = 60s});
  trace_lane lane(std::move(options));
  const auto result = lane.measure(request({"/bin/true"}, 1));
  EXPECT_EQ(result.status, measure_status::launch_failed);
  EXPECT_EQ(result.reason, "run 0: rocprofv3 execvp /nonexistent/rocprofv3: No such file or "
                           "directory; fix: run with --debug to see rocprofv3's output");
}

TEST(workers_trace_lane, traces_are_deleted_unless_kept) {
  temp_dir dir;
  auto options = fake_options(dir.path(), "gemm");
  options.keep_traces = false;
  trace_lane lane(std::move(options));
  ASSERT_EQ(lane.measure(request({"/bin/true"}, 2, 1)).status, measure_status::ok);
  ASSERT_EQ(lane.measure(request({"/bin/false"}, 1)).status, measure_status::nonzero_exit);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));

  std::filesystem::path private_folder;
  {
    auto own = fake_options({}, "gemm");
    own.keep_traces = false;
    trace_lane private_lane(std::move(own));
    private_folder = private_lane.work_folder();
    EXPECT_TRUE(std::filesystem::is_directory(private_folder));
    EXPECT_EQ(private_lane.measure(request({"/bin/true"}, 1)).samples_ns.size(), 9u);
  }
  EXPECT_FALSE(std::filesystem::exists(private_folder));
}

TEST(workers_trace_lane, a_bad_regex_or_no_recorder_fails_at_construction) {
  temp_dir dir;
  EXPECT_THROW(trace_lane(fake_options(dir.path(), "gemm(")), std::invalid_argument);
  auto options = fake_options(dir.path(), "gemm");
  options.make_recorder = nullptr;
  EXPECT_THROW(trace_lane(std::move(options)), std::invalid_argument);
}

} // namespace
} // namespace rpl::workers
