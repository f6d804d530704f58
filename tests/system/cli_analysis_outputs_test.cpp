// profile and analyze write the analysis beside the report: analysis.json (its schema), the "what
// limits this application" section, a Perfetto trace and an HTML report, from the databases the
// rocprofv3 stand-in writes (tests/tools/fake_rocprofv3.cpp: gemm_tile LDS-limited at 25 %
// occupancy, reduce_sum at 100 %).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/json_schema.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

using rpl::testing::read_text;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

TEST(cli_analysis_outputs, profile_writes_analysis_perfetto_and_html_and_prints_the_limits) {
  temp_dir dir;
  const auto out =
      run_rocm_perf({"profile", "--rocprofv3", RPL_FAKE_ROCPROFV3, "--runs", "2", "--out",
                     (dir / "out").string(), "--perfetto", (dir / "trace.json").string(),
                     "--report", (dir / "report.html").string(), "--", "/bin/true"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("What limits this application (critical path "), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("  1. gemm_tile"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("under-occupied: theoretical occupancy 25.0 % (<= 25.0 %, limited by "
                            "lds)"),
            std::string::npos)
      << out.output;

  const auto analysis = nlohmann::json::parse(read_text(dir / "out" / "analysis.json"));
  EXPECT_EQ(rpl::testing::schema_errors(analysis, "analysis.schema.json"),
            std::vector<std::string>{});
  ASSERT_EQ(analysis["kernels"].size(), 2u);
  EXPECT_EQ(analysis["kernels"][0]["bottleneck"]["class"], "under_occupied");
  EXPECT_EQ(analysis["kernels"][0]["bottleneck"]["measured"]["occupancy_limiter"], "lds");
  // No counters were recorded: no roofline, and the note says how to get one.
  EXPECT_TRUE(analysis["kernels"][0]["roofline"].is_null());
  EXPECT_NE(analysis["notes"].dump().find("--counters roofline"), std::string::npos);

  const auto dag = nlohmann::json::parse(read_text(dir / "out" / "dag.json"));
  EXPECT_EQ(rpl::testing::schema_errors(dag, "dag.schema.json"), std::vector<std::string>{});
  // One process, one stream, no synchronization: the whole last run is the path, its kernels in
  // a row (10 gemm_tile + 10 reduce_sum + 10 helpers).
  EXPECT_EQ(dag["critical_ops_total"], 30);
  EXPECT_EQ(dag["segments"], 1);
  EXPECT_DOUBLE_EQ(dag["path_ns"].get<double>(), dag["makespan_ns"].get<double>());
  EXPECT_NE(dag["notes"][0].get<std::string>().find("no stream-wait records"), std::string::npos);
  EXPECT_GT(analysis["kernels"][0]["critical_path_share"].get<double>(), 0.8);
  EXPECT_EQ(analysis["kernels"][0]["what_if"].size(), 3u);
  // A broken dag.json fails its schema.
  auto broken = dag;
  broken["kernels"][0]["critical_path_share"] = 2;
  EXPECT_FALSE(rpl::testing::schema_errors(broken, "dag.schema.json").empty());

  // The trace: one X slice per dispatch of the last run (30: 10 + 10 + 10 helper), named tracks.
  const auto trace = nlohmann::json::parse(read_text(dir / "trace.json"));
  std::size_t slices = 0, thread_names = 0;
  for (const auto& e : trace["traceEvents"]) {
    slices += e["ph"] == "X";
    thread_names += e["ph"] == "M" && e["name"] == "thread_name";
  }
  EXPECT_EQ(slices, 60u); // 30 dispatches, each also on the critical-path track
  EXPECT_GE(thread_names, 1u);

  const std::string page = read_text(dir / "report.html");
  EXPECT_NE(page.find("<svg id=\"roofline\""), std::string::npos);
  EXPECT_NE(page.find("<svg id=\"timeline\""), std::string::npos);
  EXPECT_NE(page.find("gemm_tile"), std::string::npos);
}

TEST(cli_analysis_outputs, analyze_writes_the_same_from_recorded_files_and_refuses_bad_paths) {
  temp_dir dir;
  ASSERT_EQ(run_rocm_perf({"profile", "--rocprofv3", RPL_FAKE_ROCPROFV3, "--runs", "1", "--out",
                           (dir / "p").string(), "--quiet", "--", "/bin/true"})
                .exit_code,
            0);
  const auto out =
      run_rocm_perf({"analyze", (dir / "p" / "traces").string(), "--out", (dir / "a").string()});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "a" / "analysis.json"));
  EXPECT_NE(out.output.find("What limits this application"), std::string::npos);
  // An unwritable --perfetto path is bad input, named.
  const auto bad = run_rocm_perf(
      {"analyze", (dir / "p" / "traces").string(), "--perfetto", "/proc/no/such/trace.json"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--perfetto /proc/no/such/trace.json: cannot write it"),
            std::string::npos)
      << bad.output;
}

} // namespace
} // namespace rpl
