// The trace recorders behind workers/tracers/trace_recorder.hpp: rocprofv3 (with the test
// stand-in), the CUPTI injection runner (with a shell script standing in for a CUDA program) and
// timing; each run's outcome, its databases, and the reasons profile quotes after "run N: ".

#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "support/scoped_env.hpp"
#include "support/test_support.hpp"
#include "workers/tracers/cuda/cupti_recorder.hpp"
#include "workers/tracers/rocprofv3/rocprofv3_recorder.hpp"
#include "workers/tracers/timing/timing_recorder.hpp"

namespace rpl::workers {
namespace {

using namespace std::chrono_literals;
using rpl::testing::scoped_env;
using rpl::testing::temp_dir;

rocprofv3_recorder fake_rocprofv3() {
  return rocprofv3_recorder({.executable = RPL_FAKE_ROCPROFV3, .timeout = 60s});
}

TEST(workers_trace_recorder, rocprofv3_leaves_one_database_per_process_in_the_folder) {
  temp_dir dir;
  auto recorder = fake_rocprofv3();
  const recorded_run run = recorder.record({"/bin/true"}, dir / "run-1", 1);
  ASSERT_TRUE(run.recorded()) << run.reason;
  ASSERT_EQ(run.databases.size(), 1u);
  EXPECT_EQ(run.databases[0].parent_path().parent_path(), dir / "run-1"); // <dir>/<host>/<pid>
  EXPECT_EQ(run.databases[0].filename().string().find("_results.db") + 11,
            run.databases[0].filename().string().size());
  EXPECT_GT(run.wall.count(), 0);
}

TEST(workers_trace_recorder, a_failing_rocprofv3_is_named_with_its_output) {
  temp_dir dir;
  scoped_env fail("FAKE_ROCPROF_FAIL", "1");
  auto recorder = fake_rocprofv3();
  const recorded_run run = recorder.record({"/bin/true"}, dir / "run-1", 1);
  EXPECT_EQ(run.status, record_status::run_failed);
  EXPECT_EQ(run.reason, "rocprofv3 exited with status 1; fix: run with --debug to see rocprofv3's "
                        "output\nrocprofv3 (test stand-in): simulated failure\n");
  EXPECT_TRUE(run.databases.empty());
}

TEST(workers_trace_recorder, a_rocprofv3_that_cannot_start_quotes_the_launch_error) {
  temp_dir dir;
  rocprofv3_recorder recorder({.executable = "/nonexistent/rocprofv3", .timeout = 60s});
  const recorded_run run = recorder.record({"/bin/true"}, dir / "run-1", 1);
  EXPECT_EQ(run.status, record_status::run_failed);
  EXPECT_EQ(run.reason, "rocprofv3 execvp /nonexistent/rocprofv3: No such file or directory; fix: "
                        "run with --debug to see rocprofv3's output\n");
}

TEST(workers_trace_recorder, cupti_injection_reaches_the_child_and_not_the_engine) {
  temp_dir dir;
  ASSERT_EQ(std::getenv("CUDA_INJECTION64_PATH"), nullptr);
  cupti_recorder recorder({"/opt/lib/librpl_cupti_tracer.so", 60s, false});
  // What the tracer does in a CUDA process: one database under $RPL_TRACE_DIR/<host>/.
  const std::string script =
      "test \"$CUDA_INJECTION64_PATH\" = /opt/lib/librpl_cupti_tracer.so || exit 9; "
      "mkdir -p \"$RPL_TRACE_DIR/host\" && : > \"$RPL_TRACE_DIR/host/7_results.db\"";
  const recorded_run run = recorder.record({"/bin/sh", "-c", script}, dir / "run-2", 2);
  ASSERT_TRUE(run.recorded()) << run.reason;
  EXPECT_EQ(run.databases,
            std::vector<std::filesystem::path>{dir / "run-2" / "host" / "7_results.db"});
  EXPECT_EQ(std::getenv("CUDA_INJECTION64_PATH"), nullptr);
  EXPECT_EQ(std::getenv("RPL_TRACE_DIR"), nullptr);
}

TEST(workers_trace_recorder, a_program_that_never_used_cuda_left_no_trace) {
  temp_dir dir;
  cupti_recorder recorder({"/opt/lib/librpl_cupti_tracer.so", 60s, false});
  const recorded_run run = recorder.record({"/bin/true"}, dir / "run-1", 1);
  EXPECT_EQ(run.status, record_status::no_trace);
  EXPECT_EQ(run.reason, "/bin/true left no trace: the tracer writes a database only for processes "
                        "that use CUDA; fix: check that the application launches CUDA kernels, and "
                        "run with --debug to see the tracer's messages");
}

TEST(workers_trace_recorder, a_failing_cuda_program_is_named_with_its_output) {
  temp_dir dir;
  cupti_recorder recorder({"/opt/lib/librpl_cupti_tracer.so", 60s, false});
  const recorded_run run = recorder.record({"/bin/sh", "-c", "echo boom; exit 3"}, dir / "r", 1);
  EXPECT_EQ(run.status, record_status::run_failed);
  EXPECT_EQ(run.reason, "/bin/sh -c echo boom; exit 3 exited with status 3 under the CUPTI tracer; "
                        "fix: run it alone, or with --debug to see its output\nboom\n");
}

TEST(workers_trace_recorder, a_cuda_program_that_fails_still_lists_the_databases_it_left) {
  // What the tracer does when the program aborts: the database was written before the end.
  temp_dir dir;
  cupti_recorder recorder({"/opt/lib/librpl_cupti_tracer.so", 60s, false});
  const std::string script = "mkdir -p \"$RPL_TRACE_DIR/host\" && : > "
                             "\"$RPL_TRACE_DIR/host/8_results.db\" && kill -ABRT $$";
  const recorded_run run = recorder.record({"/bin/sh", "-c", script}, dir / "r", 1);
  EXPECT_EQ(run.status, record_status::run_failed);
  EXPECT_EQ(run.reason.substr(0, run.reason.find(';')),
            "/bin/sh -c " + script + " was killed by SIGABRT (Aborted) under the CUPTI tracer");
  EXPECT_EQ(run.databases, std::vector<std::filesystem::path>{dir / "r" / "host" / "8_results.db"});
}

TEST(workers_trace_recorder, the_timeout_sends_sigterm_first_for_the_tracers_last_write) {
  temp_dir dir;
  cupti_recorder_options options{"/opt/lib/librpl_cupti_tracer.so", 300ms, false};
  options.term_grace = 20s;
  cupti_recorder recorder(options);
  // The stand-in writes its database when SIGTERM comes, as the tracer's handler does.
  const std::string script =
      "trap 'mkdir -p \"$RPL_TRACE_DIR/host\"; : > \"$RPL_TRACE_DIR/host/9_results.db\"; exit 143' "
      "TERM; while :; do sleep 0.05; done";
  const auto started = std::chrono::steady_clock::now();
  const recorded_run run = recorder.record({"/bin/sh", "-c", script}, dir / "r", 1);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s); // not the 20 s grace
  EXPECT_EQ(run.status, record_status::run_failed);
  EXPECT_NE(run.reason.find(" timed out under the CUPTI tracer"), std::string::npos) << run.reason;
  EXPECT_EQ(run.databases, std::vector<std::filesystem::path>{dir / "r" / "host" / "9_results.db"});
}

TEST(workers_trace_recorder, a_program_that_ignores_sigterm_is_killed_after_the_grace) {
  temp_dir dir;
  cupti_recorder_options options{"/opt/lib/librpl_cupti_tracer.so", 200ms, false};
  options.term_grace = 300ms;
  cupti_recorder recorder(options);
  const auto started = std::chrono::steady_clock::now();
  const recorded_run run = recorder.record(
      {"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}, dir / "r", 1);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, 500ms); // the timeout, then the grace
  EXPECT_LT(took, 10s);
  EXPECT_EQ(run.status, record_status::run_failed);
  EXPECT_NE(run.reason.find(" timed out under the CUPTI tracer"), std::string::npos) << run.reason;
  EXPECT_TRUE(run.databases.empty());
}

TEST(workers_trace_recorder, timing_measures_the_wall_time_and_names_failures) {
  timing_recorder recorder({60s, false});
  const recorded_run slept = recorder.record({"/bin/sleep", "0.05"}, {}, 1);
  ASSERT_TRUE(slept.recorded()) << slept.reason;
  EXPECT_GE(slept.wall, 50ms);
  EXPECT_TRUE(slept.databases.empty());
  const recorded_run failed = recorder.record({"/bin/false"}, {}, 2);
  EXPECT_EQ(failed.status, record_status::run_failed);
  EXPECT_EQ(failed.reason, "/bin/false exited with status 1; fix: check that the application runs "
                           "on its own (--debug shows its output)");
  timing_recorder impatient({100ms, false});
  EXPECT_EQ(impatient.record({"/bin/sleep", "5"}, {}, 1).reason,
            "/bin/sleep 5 timed out; fix: check that the application runs on its own (--debug "
            "shows its output)");
}

TEST(workers_trace_recorder, tools_are_found_by_option_then_environment_then_search) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "bin");
  rpl::testing::write_file(dir / "bin" / "rocprofv3", "#!/bin/sh\n");
  std::filesystem::permissions(dir / "bin" / "rocprofv3", std::filesystem::perms::owner_all);
  {
    scoped_env path("PATH", (dir / "bin").c_str());
    scoped_env tool("ROCPROFV3", nullptr);
    EXPECT_EQ(find_rocprofv3({}), dir / "bin" / "rocprofv3");
    EXPECT_EQ(find_rocprofv3("/x/rocprofv3"), std::filesystem::path("/x/rocprofv3"));
    scoped_env env_tool("ROCPROFV3", "/y/rocprofv3");
    EXPECT_EQ(find_rocprofv3({}), std::filesystem::path("/y/rocprofv3"));
  }
  {
    scoped_env path("PATH", "/nonexistent");
    scoped_env tool("ROCPROFV3", nullptr);
    EXPECT_EQ(find_rocprofv3({}), std::nullopt);
  }
  scoped_env tracer("RPL_CUPTI_TRACER", "/z/librpl_cupti_tracer.so");
  EXPECT_EQ(find_cupti_tracer({}), std::filesystem::path("/z/librpl_cupti_tracer.so"));
  EXPECT_EQ(find_cupti_tracer("/w/t.so"), std::filesystem::path("/w/t.so"));
}

} // namespace
} // namespace rpl::workers
