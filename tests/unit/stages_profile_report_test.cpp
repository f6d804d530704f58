// profile_report → JSON (stages/analysis/profile_report.hpp): hand-built reports against the
// documents docs/schema/profile.schema.json describes.

#include <gtest/gtest.h>

#include "stages/analysis/profile_report.hpp"
#include "support/json_schema.hpp"

namespace rpl::stages {
namespace {

rocpd::kernel_stats stats(std::string name, std::size_t count, double total_ns) {
  rocpd::kernel_stats k;
  k.name = std::move(name);
  k.count = count;
  k.total_ns = total_ns;
  k.mean_ns = total_ns / static_cast<double>(count);
  k.median_ns = k.mean_ns;
  k.p95_ns = 2 * k.mean_ns;
  k.min_ns = k.mean_ns / 2;
  k.max_ns = 2 * k.mean_ns;
  k.cv = 0.125;
  return k;
}

/// A two-run trace report: one user kernel with resources and occupancy, one helper without a
/// symbol row.
profile_report trace_report() {
  profile_report r;
  r.backend = "rocm";
  r.command = std::vector<std::string>{"./app", "-n", "4"};
  r.databases = {"/t/run-1/h/1_results.db", "/t/run-2/h/2_results.db"};
  r.agents = {{"gfx90a", "AMD Instinct MI210", 0}};
  r.stability = {{2'000'000, 4'000'000},   3'000'000, 3'000'000, 1'000'000, 0.25,
                 stability_class::unstable};
  rocpd::group_total agent{"gfx90a (agent 1)", 5, 6'000'000};
  r.totals = report_totals{6'000'000, 500'000, 9'000'000, 5, {agent}, {}, {}, {}};
  kernel_report gemm;
  gemm.runtime = stats("gemm", 4, 6'000'000);
  gemm.share = 1.0;
  gemm.block = {256, 1, 1};
  gemm.grid = {65536, 2, 1};
  gemm.resources = symbol_resources{128, 4, 48, 16384, 0, 24};
  occupancy_result o;
  o.active_waves_per_simd = 4;
  o.max_waves_per_simd = 8;
  o.active_workgroups_per_cu = 4;
  o.occupancy = 0.5;
  o.limiter = occupancy_limiter::vgprs;
  o.limit_by_resource = {{"vgprs", 4}, {"waves", 8}};
  o.unit = "waves per SIMD";
  o.wave_size = 64;
  gemm.occupancy = kernel_occupancy{"gfx90a", 256, o, 16384};
  r.kernels = {gemm};
  kernel_report fill;
  fill.runtime = stats("__amd_rocclr_fillBufferAligned", 1, 500'000);
  fill.block = {64, 1, 1};
  fill.grid = {64, 1, 1};
  r.helper_kernels = {fill};
  r.dominant_kernel = "gemm";
  return r;
}

TEST(stages_profile_report, a_trace_report_is_the_documented_json_in_milliseconds) {
  const nlohmann::json j = to_json(trace_report());
  EXPECT_EQ(rpl::testing::schema_errors(j, "profile.schema.json"), std::vector<std::string>{});
  const auto occupancy = nlohmann::json::parse(R"json({"target": "gfx90a", "threads_per_block": 256,
    "lds_bytes": 16384, "wave_size": 64, "unit": "waves per SIMD", "active": 4, "max": 8, "workgroups_per_cu": 4,
    "theoretical": 0.5, "limiter": "vgprs", "limits": {"vgprs": 4, "waves": 8}, "suggestions": []})json");
  const auto resources = nlohmann::json::parse(R"json({"vgpr": 128, "agpr": 4, "sgpr": 48,
    "lds_bytes": 16384, "scratch_bytes": 0, "kernarg_bytes": 24})json");
  nlohmann::json expected = nlohmann::json::parse(R"json({
    "schema_version": "1.1", "backend": "rocm", "command": ["./app", "-n", "4"],
    "databases": ["/t/run-1/h/1_results.db", "/t/run-2/h/2_results.db"],
    "gpu": {"agents": [{"name": "gfx90a", "product_name": "AMD Instinct MI210", "logical_index": 0}]},
    "runtime_ms": 3.0,
    "stability": {"runs": 2, "per_run_ms": [2.0, 4.0], "mean_ms": 3.0, "median_ms": 3.0,
                  "stddev_ms": 1.0, "cv": 0.25, "classification": "unstable"},
    "totals": {"gpu_time_ms": 6.0, "helper_gpu_time_ms": 0.5, "wall_span_ms": 9.0, "dispatches": 5},
    "kernels": [{"name": "gemm", "dispatches": 4, "total_ms": 6.0, "mean_ms": 1.5, "median_ms": 1.5,
                 "p95_ms": 3.0, "min_ms": 0.75, "max_ms": 3.0, "cv": 0.125, "share": 1.0,
                 "block": [256, 1, 1], "grid": [65536, 2, 1]}],
    "helper_kernels": [{"name": "__amd_rocclr_fillBufferAligned", "dispatches": 1, "total_ms": 0.5,
                        "mean_ms": 0.5, "median_ms": 0.5, "p95_ms": 1.0, "min_ms": 0.25,
                        "max_ms": 1.0, "cv": 0.125, "share": 0.0, "block": [64, 1, 1],
                        "grid": [64, 1, 1], "resources": null, "occupancy": null}],
    "per_agent": [{"name": "gfx90a (agent 1)", "dispatches": 5, "total_ms": 6.0}],
    "per_queue": [], "per_stream": [], "per_process": [],
    "kernel": {"name": "gemm", "grid": [65536, 2, 1], "block": [256, 1, 1]},
    "dominant_kernel": "gemm", "roofline": null, "note": null,
    "partial": false, "partial_reasons": []})json");
  expected["kernels"][0]["resources"] = resources;
  expected["kernels"][0]["occupancy"] = occupancy;
  expected["resources"] = resources;
  expected["occupancy"] = occupancy;
  EXPECT_EQ(j, expected) << j.dump(2);
}

TEST(stages_profile_report, occupancy_note_appears_only_when_there_is_one) {
  profile_report r = trace_report();
  r.kernels[0].occupancy.reset();
  r.kernels[0].occupancy_note = "unknown target 'gfx1201'";
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["kernels"][0]["occupancy_note"], "unknown target 'gfx1201'");
  EXPECT_EQ(j["kernels"][0]["occupancy"], nullptr);
  EXPECT_EQ(j["occupancy"], nullptr); // the dominant kernel's
  EXPECT_FALSE(j["helper_kernels"][0].contains("occupancy_note"));
  EXPECT_EQ(rpl::testing::schema_errors(j, "profile.schema.json"), std::vector<std::string>{});
}

TEST(stages_profile_report, without_a_dominant_kernel_the_single_kernel_fields_are_null) {
  profile_report r = trace_report();
  r.dominant_kernel.clear();
  r.command.reset(); // analyze: recorded elsewhere
  r.backend = "rocpd";
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["kernel"], nullptr);
  EXPECT_EQ(j["resources"], nullptr);
  EXPECT_EQ(j["occupancy"], nullptr);
  EXPECT_EQ(j["dominant_kernel"], nullptr);
  EXPECT_EQ(j["command"], nullptr);
}

TEST(stages_profile_report, a_timing_report_has_no_totals_or_groups) {
  profile_report r;
  r.backend = "timing";
  r.command = std::vector<std::string>{"/bin/true"};
  r.stability = {{1'500'000}, 1'500'000, 1'500'000, 0, 0, stability_class::stable};
  r.note = "timing backend: whole-process wall times";
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(rpl::testing::schema_errors(j, "profile.schema.json"), std::vector<std::string>{});
  for (const char* key : {"totals", "per_agent", "per_queue", "per_stream", "per_process"}) {
    EXPECT_FALSE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["databases"], nlohmann::json::array());
  EXPECT_EQ(j["gpu"], nlohmann::json({{"agents", nlohmann::json::array()}}));
  EXPECT_EQ(j["kernels"], nlohmann::json::array());
  EXPECT_DOUBLE_EQ(j["runtime_ms"].get<double>(), 1.5);
  EXPECT_EQ(j["note"], "timing backend: whole-process wall times");
}

TEST(stages_profile_report, a_partial_report_says_so_with_its_reasons) {
  profile_report r = trace_report();
  r.partial = true;
  r.partial_reasons = {"run 1: the application ended abnormally: ./app was killed by SIGABRT "
                       "(Aborted) under the CUPTI tracer",
                       "/t/run-1/h/1_results.db: written when the process received SIGABRT, "
                       "before it ended: kernels still running then are missing"};
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(rpl::testing::schema_errors(j, "profile.schema.json"), std::vector<std::string>{});
  EXPECT_EQ(j["partial"], true);
  EXPECT_EQ(j["partial_reasons"], nlohmann::json(r.partial_reasons));
  // Both fields are required: a 1.1 document without them fails the schema.
  nlohmann::json without = j;
  without.erase("partial");
  EXPECT_FALSE(rpl::testing::schema_errors(without, "profile.schema.json").empty());
}

} // namespace
} // namespace rpl::stages
