#include <cerrno>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "workers/lanes/timing/timing_lane.hpp"

namespace rpl::workers {
namespace {

using messages::measure_status;

/// Measures through the lane contract, as the engine does.
messages::measure_result measure(const messages::measure_request& request,
                                 const std::string& lane = "t") {
  timing_lane backend(lane);
  const lane_backend& as_lane = backend;
  EXPECT_EQ(as_lane.name(), lane);
  return backend.measure(request);
}

messages::measure_request
request_for(std::vector<std::string> argv, std::uint32_t runs = 3, std::uint32_t warmup = 1) {
  messages::measure_request request;
  request.candidate_key = "k";
  request.argv = std::move(argv);
  request.runs = runs;
  request.warmup = warmup;
  request.timeout_ms = 5000;
  return request;
}

TEST(workers_timing_lane, ok_runs_give_one_sample_each) {
  const auto result = measure(request_for({"true"}, 4, 2), "timing-0");
  EXPECT_EQ(result.status, measure_status::ok) << result.reason;
  ASSERT_EQ(result.samples_ns.size(), 4u);
  for (const auto sample : result.samples_ns) {
    EXPECT_GT(sample, 0);
    EXPECT_LT(sample, 1'000'000'000);
  }
  EXPECT_EQ(result.lane, "timing-0");
  EXPECT_TRUE(result.reason.empty());
}

TEST(workers_timing_lane, samples_reflect_run_time) {
  const auto result = measure(request_for({"sleep", "0.05"}, 2, 0));
  ASSERT_EQ(result.status, measure_status::ok) << result.reason;
  ASSERT_EQ(result.samples_ns.size(), 2u);
  EXPECT_GE(result.samples_ns[0], 50'000'000);
}

TEST(workers_timing_lane, nonzero_exit_quotes_the_first_line) {
  const auto result =
      measure(request_for({"sh", "-c", "echo; echo 'bad input' >&2; echo more; exit 3"}, 3, 0));
  EXPECT_EQ(result.status, measure_status::nonzero_exit);
  EXPECT_EQ(result.failed_run, 0);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.reason, "run 0 exited with status 3: bad input");
  EXPECT_TRUE(result.samples_ns.empty());
}

TEST(workers_timing_lane, failure_in_a_later_run_keeps_earlier_samples) {
  // Fails on the third timed run: a counter file private to this test counts the invocations.
  const auto counter = std::filesystem::temp_directory_path() /
                       ("rpl_timing_lane_counter_" + std::to_string(::getpid()));
  std::filesystem::remove(counter);
  const std::string script = "n=$(cat \"$0\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0\"; "
                             "if [ $n -ge 4 ]; then exit 5; fi";
  const auto result = measure(request_for({"sh", "-c", script, counter.string()}, 5, 1));
  std::filesystem::remove(counter);
  EXPECT_EQ(result.status, measure_status::nonzero_exit) << result.reason;
  EXPECT_EQ(result.failed_run, 2);
  EXPECT_EQ(result.samples_ns.size(), 2u);
  EXPECT_EQ(result.reason, "run 2 exited with status 5");
}

TEST(workers_timing_lane, crash_is_reported_with_the_signal) {
  const auto result = measure(request_for({"sh", "-c", "kill -SEGV $$"}, 2, 0));
  EXPECT_EQ(result.status, measure_status::crashed);
  EXPECT_EQ(result.term_signal, SIGSEGV);
  EXPECT_EQ(result.failed_run, 0);
  EXPECT_EQ(result.reason, "run 0 was killed by SIGSEGV (Segmentation fault)");
}

TEST(workers_timing_lane, hang_times_out) {
  auto request = request_for({"sh", "-c", "sleep 100 & sleep 100"}, 2, 0);
  request.timeout_ms = 150;
  const auto started = std::chrono::steady_clock::now();
  const auto result = measure(request);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_EQ(result.status, measure_status::timed_out);
  EXPECT_EQ(result.failed_run, 0);
  EXPECT_EQ(result.term_signal, SIGKILL);
  EXPECT_EQ(result.reason, "run 0 timed out after 150 ms; its process group was killed");
  EXPECT_EQ(result.leftover_processes, 0u) << "its group was killed on purpose";
}

TEST(workers_timing_lane, timeout_reason_in_seconds) {
  auto request = request_for({"sleep", "100"}, 1, 0);
  request.timeout_ms = 1000;
  const auto result = measure(request);
  EXPECT_EQ(result.status, measure_status::timed_out);
  EXPECT_EQ(result.reason, "run 0 timed out after 1.0 s; its process group was killed");
}

TEST(workers_timing_lane, missing_binary_is_launch_failed) {
  const auto result = measure(request_for({"./rpl-missing-binary"}, 3, 1));
  EXPECT_EQ(result.status, measure_status::launch_failed);
  EXPECT_EQ(result.failed_run, -1);
  EXPECT_EQ(
      result.reason,
      "warm-up 1 could not be started: execvp ./rpl-missing-binary: No such file or directory");
}

TEST(workers_timing_lane, warmup_failure_is_reported) {
  const auto result = measure(request_for({"sh", "-c", "exit 2"}, 3, 2));
  EXPECT_EQ(result.status, measure_status::nonzero_exit);
  EXPECT_EQ(result.failed_run, -1);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.reason, "warm-up 1 exited with status 2");
  EXPECT_TRUE(result.samples_ns.empty());
}

TEST(workers_timing_lane, a_daemonizing_candidate_leaves_nothing_behind_and_is_flagged) {
  // Each run starts a daemon (setsid: out of the run's process group and session) and exits as
  // soon as the daemon has written its pid into the folder.
  const auto folder = std::filesystem::temp_directory_path() /
                      ("rpl_timing_lane_daemons_" + std::to_string(::getpid()));
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  const std::string script =
      "F=\"$0/d.$$\"; (setsid sh -c \"echo \\$\\$ > $F; exec sleep 300\" &); "
      "while [ ! -s \"$F\" ]; do sleep 0.01; done";
  const auto result = measure(request_for({"sh", "-c", script, folder.string()}, 2, 1));
  std::vector<pid_t> daemons;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::ifstream in(entry.path());
    long pid = 0;
    in >> pid;
    daemons.push_back(static_cast<pid_t>(pid));
  }
  std::filesystem::remove_all(folder);
  EXPECT_EQ(result.status, measure_status::ok) << result.reason;
  EXPECT_EQ(result.samples_ns.size(), 2u) << "the samples stand";
  EXPECT_EQ(result.leftover_processes, 3u) << "one daemon per run, the warm-up's too";
  ASSERT_EQ(daemons.size(), 3u);
  for (const pid_t daemon : daemons) {
    ASSERT_GT(daemon, 1);
    EXPECT_TRUE(::kill(daemon, 0) != 0 && errno == ESRCH) << "daemon " << daemon << " survived";
  }
}

TEST(workers_timing_lane, a_failing_candidate_is_flagged_too) {
  const auto folder = std::filesystem::temp_directory_path() /
                      ("rpl_timing_lane_failing_" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const std::string script = "F=\"$0/d\"; (setsid sh -c \"echo \\$\\$ > $F; exec sleep 300\" &); "
                             "while [ ! -s \"$F\" ]; do sleep 0.01; done; exit 3";
  const auto result = measure(request_for({"sh", "-c", script, folder.string()}, 2, 0));
  std::filesystem::remove_all(folder);
  EXPECT_EQ(result.status, measure_status::nonzero_exit);
  EXPECT_EQ(result.leftover_processes, 1u);
}

TEST(workers_timing_lane, one_lane_serves_many_measurements) {
  timing_lane lane("cpu3");
  const auto first = lane.measure(request_for({"true"}, 2, 0));
  const auto second = lane.measure(request_for({"sh", "-c", "exit 4"}, 2, 0));
  const auto third = lane.measure(request_for({"true"}, 1, 0));
  EXPECT_EQ(first.status, measure_status::ok);
  EXPECT_EQ(first.samples_ns.size(), 2u);
  EXPECT_EQ(second.status, measure_status::nonzero_exit);
  EXPECT_EQ(second.reason, "run 0 exited with status 4");
  EXPECT_EQ(third.status, measure_status::ok);
  EXPECT_EQ(third.samples_ns.size(), 1u);
  EXPECT_EQ(third.lane, "cpu3");
}

} // namespace
} // namespace rpl::workers
