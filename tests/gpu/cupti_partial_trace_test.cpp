// The CUPTI tracer keeps the trace of an application that ends badly (workers/tracers/cupti:
// checkpoints, the last write on a fatal signal), and `rocm-perf profile --backend cuda` reports
// it as partial. tests/gpu/partial_trace_app.cu runs 20 kernels, synchronizes, then aborts,
// segfaults, hangs until profile's --timeout (SIGTERM; or SIGKILL when it ignores SIGTERM), calls
// _exit or exit(3), or returns. Each case checks profile's exit status, its JSON (partial,
// partial_reasons), the database's completeness mark and that the 20 kernels are in it. Skips
// without an NVIDIA GPU, the tracer or the program (built only with -DRPL_BUILD_CUDA=ON).

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/cuda_programs.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/trace_completeness.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
namespace rocpd = stages::rocpd;
using rpl::testing::temp_dir;

#ifndef RPL_PARTIAL_TRACE_APP
#define RPL_PARTIAL_TRACE_APP nullptr
#endif

constexpr int kernels = 20;

/// What one database holds: its completeness mark and the dispatches of before_end_kernel.
struct trace_facts {
  rocpd::trace_completeness completeness;
  std::size_t before_end_dispatches = 0;
};

trace_facts read_trace(const fs::path& database) {
  trace_facts facts;
  const auto reader = rocpd::reader::open({database});
  facts.completeness = rocpd::read_completeness(reader.databases().at(0).metadata);
  reader.for_each_dispatch([&](const rocpd::dispatch_row& row) {
    if (row.kernel_name.find("before_end_kernel") != std::string_view::npos)
      ++facts.before_end_dispatches;
  });
  return facts;
}

/// Kernels of the report named like `needle`, and their dispatches.
long long report_dispatches(const nlohmann::json& report, const std::string& needle) {
  long long total = 0;
  for (const auto& k : report.value("kernels", nlohmann::json::array()))
    if (k["name"].get<std::string>().find(needle) != std::string::npos)
      total += k["dispatches"].get<long long>();
  return total;
}

class cupti_partial_trace : public ::testing::Test {
protected:
  void SetUp() override {
    const std::string why = rpl::testing::cuda_profile_unavailable(rocm_perf_);
    if (!why.empty())
      GTEST_SKIP() << why;
    std::vector<std::string> tried;
    app_ = rpl::testing::find_cuda_program("RPL_PARTIAL_TRACE_APP", "partial_trace_app",
                                           RPL_PARTIAL_TRACE_APP, tried);
    if (app_.empty())
      GTEST_SKIP() << "no partial_trace_app (tests/gpu/partial_trace_app.cu, built with "
                      "-DRPL_BUILD_CUDA=ON, or set RPL_PARTIAL_TRACE_APP); looked at "
                   << nlohmann::json(tried).dump();
  }

  /// profile --runs `runs` --json, plus `options`, of the app ending with `then`.
  rpl::testing::profile_run profile(const std::string& then,
                                    std::vector<std::string> options = {},
                                    std::vector<std::string> app_args = {},
                                    int runs = 3) {
    std::vector<std::string> app = {app_.string(), "--kernels", std::to_string(kernels), "--then",
                                    then};
    app.insert(app.end(), app_args.begin(), app_args.end());
    options.insert(options.begin(), {"--runs", std::to_string(runs), "--json"});
    auto run = rpl::testing::run_profile(rocm_perf_, dir_ / then, options, app);
    EXPECT_FALSE(run.outcome.timed_out) << run.outcome.output;
    return run;
  }

  void expect_whole_kernels(const rpl::testing::profile_run& run, const trace_facts& facts) {
    EXPECT_EQ(facts.before_end_dispatches, static_cast<std::size_t>(kernels)) << run.outcome.output;
    EXPECT_EQ(report_dispatches(run.report, "before_end_kernel"), kernels) << run.report.dump(2);
  }

  fs::path rocm_perf_;
  fs::path app_;
  temp_dir dir_;
};

TEST_F(cupti_partial_trace, an_application_that_aborts_leaves_its_trace_marked_by_the_signal) {
  const auto run = profile("abort");
  ASSERT_EQ(run.outcome.exit_code, 1) << run.outcome.output;
  ASSERT_EQ(run.traces.size(), 1u) << run.outcome.output; // one run only: later ones not started
  const trace_facts facts = read_trace(run.traces[0]);
  EXPECT_EQ(facts.completeness.end, rocpd::trace_end::signal);
  EXPECT_EQ(facts.completeness.signal, "SIGABRT");
  expect_whole_kernels(run, facts);
  ASSERT_TRUE(run.report.is_object()) << run.outcome.output;
  EXPECT_EQ(run.report["schema_version"], "1.1");
  EXPECT_EQ(run.report["partial"], true);
  EXPECT_EQ(run.report["stability"]["runs"], 1);
  const std::string reasons = run.report["partial_reasons"].dump();
  EXPECT_NE(reasons.find("run 1: the application ended abnormally"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("SIGABRT"), std::string::npos) << reasons;
  EXPECT_NE(run.outcome.output.find("the report is partial"), std::string::npos)
      << run.outcome.output;
}

TEST_F(cupti_partial_trace, a_segfault_leaves_the_trace_too) {
  const auto run = profile("segv");
  ASSERT_EQ(run.outcome.exit_code, 1) << run.outcome.output;
  ASSERT_EQ(run.traces.size(), 1u) << run.outcome.output;
  const trace_facts facts = read_trace(run.traces[0]);
  EXPECT_EQ(facts.completeness.end, rocpd::trace_end::signal);
  EXPECT_EQ(facts.completeness.signal, "SIGSEGV");
  expect_whole_kernels(run, facts);
  EXPECT_EQ(run.report["partial"], true);
}

TEST_F(cupti_partial_trace, the_timeouts_sigterm_gets_a_last_write) {
  const auto started = std::chrono::steady_clock::now();
  const auto run = profile("hang", {"--timeout", "4"});
  // SIGTERM at 4 s; the tracer writes and the application dies well within the 5 s grace.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  ASSERT_EQ(run.outcome.exit_code, 1) << run.outcome.output;
  ASSERT_EQ(run.traces.size(), 1u) << run.outcome.output;
  const trace_facts facts = read_trace(run.traces[0]);
  EXPECT_EQ(facts.completeness.end, rocpd::trace_end::signal);
  EXPECT_EQ(facts.completeness.signal, "SIGTERM");
  expect_whole_kernels(run, facts);
  EXPECT_EQ(run.report["partial"], true);
  EXPECT_NE(run.report["partial_reasons"].dump().find("timed out"), std::string::npos)
      << run.report["partial_reasons"].dump();
}

TEST_F(cupti_partial_trace, sigkill_after_an_ignored_sigterm_leaves_the_last_checkpoint) {
  const auto run = profile("hang-ignoring-sigterm", {"--timeout", "3"});
  ASSERT_EQ(run.outcome.exit_code, 1) << run.outcome.output;
  ASSERT_EQ(run.traces.size(), 1u) << run.outcome.output;
  const trace_facts facts = read_trace(run.traces[0]);
  EXPECT_EQ(facts.completeness.end, rocpd::trace_end::checkpoint);
  EXPECT_EQ(facts.completeness.checkpoint_period_ms, 500);
  expect_whole_kernels(run, facts); // done 3 s before: a checkpoint took them
  EXPECT_EQ(run.report["partial"], true);
  EXPECT_NE(run.report["partial_reasons"].dump().find("last checkpoint"), std::string::npos)
      << run.report["partial_reasons"].dump();
}

TEST_F(cupti_partial_trace, underscore_exit_skips_exit_handlers_and_leaves_the_checkpoint) {
  // Exit status 0: the run succeeded, but its database says it is not the final write.
  const auto run = profile("_exit", {}, {"--sleep-ms", "1500"}, 1);
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.output;
  ASSERT_EQ(run.traces.size(), 1u) << run.outcome.output;
  const trace_facts facts = read_trace(run.traces[0]);
  EXPECT_EQ(facts.completeness.end, rocpd::trace_end::checkpoint);
  expect_whole_kernels(run, facts);
  EXPECT_EQ(run.report["partial"], true);
}

TEST_F(cupti_partial_trace, a_failing_exit_status_keeps_a_complete_trace_reported_as_partial) {
  const auto run = profile("exit");
  ASSERT_EQ(run.outcome.exit_code, 1) << run.outcome.output;
  ASSERT_EQ(run.traces.size(), 1u) << run.outcome.output;
  const trace_facts facts = read_trace(run.traces[0]);
  EXPECT_EQ(facts.completeness.end, rocpd::trace_end::complete);
  expect_whole_kernels(run, facts);
  EXPECT_EQ(run.report["partial"], true); // the application failed: said, though nothing is lost
  EXPECT_NE(run.report["partial_reasons"].dump().find("exited with status 3"), std::string::npos)
      << run.report["partial_reasons"].dump();
}

TEST_F(cupti_partial_trace, a_normal_end_is_complete_and_not_partial) {
  const auto run = profile("return");
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.output;
  ASSERT_EQ(run.traces.size(), 3u) << run.outcome.output;
  for (const auto& trace : run.traces) {
    const trace_facts facts = read_trace(trace);
    EXPECT_EQ(facts.completeness.end, rocpd::trace_end::complete) << trace;
    EXPECT_EQ(facts.before_end_dispatches, static_cast<std::size_t>(kernels)) << trace;
  }
  EXPECT_EQ(run.report["partial"], false);
  EXPECT_TRUE(run.report["partial_reasons"].empty());
  EXPECT_EQ(report_dispatches(run.report, "before_end_kernel"), 3 * kernels);
}

} // namespace
} // namespace rpl
