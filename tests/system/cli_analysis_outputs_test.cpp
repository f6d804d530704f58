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

TEST(cli_analysis_outputs, counters_roofline_records_passes_and_fills_the_roofline_by_hand) {
  temp_dir dir;
  const auto out =
      run_rocm_perf({"profile", "--rocprofv3", RPL_FAKE_ROCPROFV3, "--runs", "1", "--counters",
                     "roofline", "--out", (dir / "out").string(), "--", "/bin/true"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  // Three rocprofv3 --pmc passes beside the traced run.
  for (const char* pass : {"pass-1", "pass-2", "pass-3"})
    EXPECT_TRUE(std::filesystem::is_directory(dir / "out" / "traces" / "counters" / pass)) << pass;
  const auto roofline = nlohmann::json::parse(read_text(dir / "out" / "roofline.json"));
  EXPECT_EQ(rpl::testing::schema_errors(roofline, "roofline.schema.json"),
            std::vector<std::string>{});
  const auto& gemm = roofline["kernels"][0]["roofline"];
  ASSERT_TRUE(gemm.is_object()) << roofline.dump(2);
  // The stand-in counts 1000 per counter (10 for BUBBLE, 100 for 32B/64B), SQ_* in two instances
  // of 500. gfx90a: VALU per type 64 x (1000 + 1000 + 1000 + 2 x 1000) = 320,000; MFMA per type
  // 512 x 1000 = 512,000; HBM 32 x 100 + 64 x (1000 - 100) + 64 x 100 + 32 x (1000 - 100) = 96,000.
  EXPECT_DOUBLE_EQ(gemm["flops_by_type"]["valu_f32"].get<double>(), 320000);
  EXPECT_DOUBLE_EQ(gemm["flops_by_type"]["mfma_f16"].get<double>(), 512000);
  EXPECT_DOUBLE_EQ(gemm["flops"].get<double>(), 3 * 320000.0 + 4 * 512000.0);
  EXPECT_DOUBLE_EQ(gemm["dram_bytes"].get<double>(), 96000);
  EXPECT_DOUBLE_EQ(gemm["arithmetic_intensity"].get<double>(),
                   (3 * 320000.0 + 4 * 512000.0) / 96000);
  EXPECT_EQ(gemm["bound"], "memory");
  // Per dispatch too: 10 gemm_tile dispatches in each pass, each with the same counts.
  const auto& dispatches = roofline["kernels"][0]["dispatches"];
  ASSERT_EQ(dispatches.size(), 10u);
  EXPECT_DOUBLE_EQ(dispatches[3]["flops"].get<double>(), 3 * 320000.0 + 4 * 512000.0);
  EXPECT_DOUBLE_EQ(dispatches[3]["dram_bytes"].get<double>(), 96000);
  // The peaks say which product they assumed (the stand-in's MI210 is not in configs/arch).
  EXPECT_NE(roofline["peaks"]["notes"].dump().find("assumed"), std::string::npos);
  // The analysis now has compute and memory percentages for every kernel.
  const auto analysis = nlohmann::json::parse(read_text(dir / "out" / "analysis.json"));
  EXPECT_TRUE(analysis["kernels"][1]["roofline"].is_object());
  EXPECT_EQ(analysis["kernels"][1]["bottleneck"]["class"], "latency_bound");
}

TEST(cli_analysis_outputs, bad_counter_and_peak_requests_are_bad_input) {
  const auto timing = run_rocm_perf(
      {"profile", "--no-rocprof", "--counters", "roofline", "--runs", "1", "--", "/bin/true"});
  EXPECT_EQ(timing.exit_code, 2) << timing.output;
  EXPECT_NE(timing.output.find("needs a tracing backend"), std::string::npos) << timing.output;
  const auto set = run_rocm_perf({"profile", "--counters", "everything", "--", "/bin/true"});
  EXPECT_EQ(set.exit_code, 2) << set.output;
  temp_dir dir;
  ASSERT_EQ(run_rocm_perf({"profile", "--rocprofv3", RPL_FAKE_ROCPROFV3, "--runs", "1", "--out",
                           (dir / "p").string(), "--quiet", "--", "/bin/true"})
                .exit_code,
            0);
  const auto peak =
      run_rocm_perf({"analyze", (dir / "p" / "traces").string(), "--peak", "hbm=fast"});
  EXPECT_EQ(peak.exit_code, 2) << peak.output;
  EXPECT_NE(peak.output.find("--peak hbm=fast: expected KEY=VALUE with a positive number"),
            std::string::npos)
      << peak.output;
}

} // namespace
} // namespace rpl

namespace rpl {
namespace {

const std::filesystem::path att_fixtures = rpl::testing::source_dir / "tests/fixtures/att";

TEST(cli_analysis_outputs, thread_traces_give_each_traced_kernel_its_stalls_and_next_step) {
  temp_dir dir;
  const auto out =
      run_rocm_perf({"profile", "--rocprofv3", RPL_FAKE_ROCPROFV3, "--runs", "1", "--counters",
                     "roofline", "--thread-trace", (att_fixtures / "run").string(),
                     "--thread-trace", (att_fixtures / "gemm_tile_code.json").string(), "--out",
                     (dir / "out").string(), "--", "/bin/true"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto analysis = nlohmann::json::parse(read_text(dir / "out" / "analysis.json"));
  EXPECT_EQ(rpl::testing::schema_errors(analysis, "analysis.schema.json"),
            std::vector<std::string>{});
  const nlohmann::json* reduce = nullptr;
  const nlohmann::json* gemm = nullptr;
  for (const auto& k : analysis["kernels"]) {
    if (k["name"].get<std::string>().rfind("reduce_sum", 0) == 0)
      reduce = &k;
    if (k["name"].get<std::string>().rfind("gemm_tile", 0) == 0)
      gemm = &k;
  }
  ASSERT_NE(reduce, nullptr);
  ASSERT_NE(gemm, nullptr);
  // The folder's stats CSV was read, not also its code.json (the same dispatch): one trace.
  const auto& trace = (*reduce)["thread_trace"];
  EXPECT_EQ(trace["traces"], 1);
  EXPECT_EQ(trace["wave_cycles"], 32992);
  EXPECT_EQ(trace["top_stall"], "vmem_wait");
  // Latency bound by its roofline (as without the trace), now with the stall as evidence and its
  // next step.
  const auto& label = (*reduce)["bottleneck"];
  EXPECT_EQ(label["class"], "latency_bound");
  EXPECT_EQ(label["rule"], "sol.both_low.latency.stall");
  EXPECT_EQ(label["measured"]["top_stall"], "vmem_wait");
  EXPECT_EQ(label["measured"]["stall_source"], "thread trace");
  EXPECT_NE(label["because"].get<std::string>().find(
                "the thread trace's dominant stall is vmem_wait (62.1 % of the traced waves' "
                "cycles"),
            std::string::npos)
      << label.dump(2);
  EXPECT_NE(label["next_step"].get<std::string>().find("s_waitcnt vmcnt"), std::string::npos);
  EXPECT_EQ((*gemm)["thread_trace"]["top_stall"], "mfma");
  EXPECT_EQ((*gemm)["thread_trace"]["stall_cycles"]["mfma"], 16384);
  // scale_kernel is not in the stand-in's trace: said, not dropped silently.
  EXPECT_NE(analysis["notes"].dump().find("the thread trace of scale_kernel(float*, float) "
                                          "matched no kernel"),
            std::string::npos)
      << analysis["notes"].dump();
  EXPECT_NE(analysis["notes"].dump().find("thread trace: 2 file(s), 3 traced kernel(s), 2 "
                                          "matched"),
            std::string::npos)
      << analysis["notes"].dump();
}

TEST(cli_analysis_outputs, a_thread_trace_without_counters_is_evidence_and_bad_ones_are_named) {
  temp_dir dir;
  ASSERT_EQ(run_rocm_perf({"profile", "--rocprofv3", RPL_FAKE_ROCPROFV3, "--runs", "1", "--out",
                           (dir / "p").string(), "--quiet", "--", "/bin/true"})
                .exit_code,
            0);
  const auto out = run_rocm_perf({"analyze", (dir / "p" / "traces").string(), "--thread-trace",
                                  (att_fixtures / "run").string(), "--out", (dir / "a").string()});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto analysis = nlohmann::json::parse(read_text(dir / "a" / "analysis.json"));
  bool seen = false;
  for (const auto& k : analysis["kernels"]) {
    if (k["name"].get<std::string>().rfind("reduce_sum", 0) != 0)
      continue;
    seen = true;
    // No roofline: no class, but the missing reason carries the stall and its advice.
    EXPECT_TRUE(k["bottleneck"]["class"].is_null()) << k.dump(2);
    EXPECT_NE(k["bottleneck"]["missing"].get<std::string>().find(
                  "the thread trace's dominant stall is vmem_wait"),
              std::string::npos)
        << k.dump(2);
  }
  EXPECT_TRUE(seen);

  const auto missing = run_rocm_perf(
      {"analyze", (dir / "p" / "traces").string(), "--thread-trace", (dir / "no-such").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("--thread-trace " + (dir / "no-such").string() +
                                ": no such file or folder; fix:"),
            std::string::npos)
      << missing.output;
  std::filesystem::create_directories(dir / "empty");
  const auto empty = run_rocm_perf(
      {"analyze", (dir / "p" / "traces").string(), "--thread-trace", (dir / "empty").string()});
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("no stats_*.csv or code.json under it"), std::string::npos)
      << empty.output;
}

} // namespace
} // namespace rpl
