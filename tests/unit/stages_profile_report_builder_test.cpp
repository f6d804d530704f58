// The profile report builder (stages/analysis/profile_report_builder.hpp) over small rocpd
// databases written with the writer: two runs of one process each, two user kernels, a kernel
// without a symbol row and a runtime helper, every duration chosen so that the figures are known.

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/analysis/profile_report_builder.hpp"
#include "stages/analysis/report_text.hpp"
#include "stages/trace/cupti_mapping.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "stages/trace/trace_completeness.hpp"
#include "support/json_schema.hpp"
#include "support/test_support.hpp"

namespace rpl::stages {
namespace {

using rpl::testing::temp_dir;

/// One dispatch of the fixture.
struct launch {
  std::int64_t kernel_id;
  std::int64_t duration_ns;
  std::int64_t block = 256;
  std::int64_t lds_bytes = 0; ///< the dispatch's group segment (static + dynamic)
};

/// One process trace on one GPU agent named `agent`: symbols 1 gemm (128 VGPRs, 16 KiB static
/// LDS), 2 reduce (32 VGPRs), 3 the ROCclr fill helper; kernel id 9 has no symbol. Dispatches run
/// back to back from `start_ns`, 1 µs apart. Returns the last end.
std::int64_t write_run(const std::filesystem::path& path,
                       std::int64_t pid,
                       const std::string& agent,
                       std::int64_t start_ns,
                       const std::vector<launch>& launches,
                       const rocpd::trace_completeness& completeness = {}) {
  std::filesystem::create_directories(path.parent_path());
  rocpd::writer w(path);
  for (const auto& [tag, value] : rocpd::completeness_metadata(completeness)) {
    w.add_metadata(tag, value);
  }
  rocpd::node_info node;
  node.hostname = "testhost";
  w.add_node(node);
  rocpd::process_info process;
  process.pid = pid;
  process.command = "./app";
  w.add_process(process);
  rocpd::thread_info thread;
  thread.tid = pid;
  w.add_thread(thread);
  rocpd::agent_info cpu;
  cpu.type = "CPU";
  cpu.name = "AMD EPYC 7763";
  w.add_agent(cpu);
  rocpd::agent_info gpu;
  gpu.absolute_index = 1;
  gpu.name = agent;
  gpu.product_name = "AMD Instinct MI210";
  w.add_agent(gpu);
  rocpd::code_object_info code_object;
  code_object.id = 1;
  code_object.agent_id = 1;
  w.add_code_object(code_object);
  const struct {
    const char* name;
    std::int64_t vgprs, sgprs, lds;
  } symbols[] = {{"gemm", 128, 48, 16384},
                 {"reduce", 32, 24, 4096},
                 {"__amd_rocclr_fillBufferAligned", 16, 16, 0}};
  for (std::int64_t id = 1; id <= 3; ++id) {
    rocpd::kernel_symbol_info s;
    s.id = id;
    s.code_object_id = 1;
    s.kernel_name = symbols[id - 1].name;
    s.arch_vgpr_count = symbols[id - 1].vgprs;
    s.sgpr_count = symbols[id - 1].sgprs;
    s.group_segment_size = symbols[id - 1].lds;
    s.private_segment_size = 8;
    s.kernarg_segment_size = 24;
    w.add_kernel_symbol(s);
  }
  std::int64_t now = start_ns;
  std::int64_t correlation = 0;
  for (const auto& l : launches) {
    rocpd::dispatch_info d;
    d.agent_id = 1;
    d.kernel_id = l.kernel_id;
    d.correlation_id = ++correlation;
    d.start_ns = now;
    d.end_ns = now + l.duration_ns;
    d.workgroup = {l.block, 1, 1};
    d.grid = {l.block * 1024, 1, 1};
    d.group_segment_size = l.lds_bytes;
    w.add_dispatch(d);
    now = d.end_ns + 1000;
  }
  w.commit();
  return now - 1000;
}

class stages_profile_report_builder : public ::testing::Test {
protected:
  void SetUp() override {
    // gemm carries 16 KiB of dynamic LDS on top of its static 16 KiB; one launch of 128 threads.
    write_run(dir_ / "run-1" / "100_results.db", 100, "gfx90a", 1'000'000,
              {{1, 4000, 256, 32768},
               {2, 1000},
               {1, 4100, 256, 32768},
               {9, 500},
               {3, 300},
               {1, 4200, 128, 32768},
               {2, 1200}});
    last_end_ = write_run(dir_ / "run-2" / "200_results.db", 200, "gfx90a", 2'000'000,
                          {{1, 4400, 256, 32768},
                           {2, 1100},
                           {1, 4500, 256, 32768},
                           {9, 600},
                           {3, 300},
                           {1, 4600, 256, 32768},
                           {2, 1300}});
  }

  profile_report build(const std::string& arch = {}) const {
    report_context context;
    context.backend = "rocm";
    context.command = std::vector<std::string>{"./app", "--size", "1024"};
    context.arch = arch;
    return build_profile_report({{dir_ / "run-1"}, {dir_ / "run-2"}}, context);
  }

  temp_dir dir_;
  std::int64_t last_end_ = 0;
};

TEST_F(stages_profile_report_builder, per_kernel_runtime_is_over_all_runs) {
  const profile_report r = build();
  ASSERT_EQ(r.kernels.size(), 3u);
  const kernel_report& gemm = r.kernels[0];
  EXPECT_EQ(gemm.runtime.name, "gemm");
  EXPECT_EQ(gemm.runtime.count, 6u);
  EXPECT_DOUBLE_EQ(gemm.runtime.total_ns, 25800.0);
  EXPECT_DOUBLE_EQ(gemm.runtime.median_ns, 4300.0); // (4200 + 4400) / 2
  EXPECT_DOUBLE_EQ(gemm.runtime.p95_ns, 4600.0);
  EXPECT_DOUBLE_EQ(gemm.share, 25800.0 / 31500.0);
  EXPECT_EQ(r.kernels[1].runtime.name, "reduce");
  EXPECT_DOUBLE_EQ(r.kernels[1].runtime.total_ns, 4600.0);
  EXPECT_EQ(r.kernels[2].runtime.name, "<unknown kernel 9>");
  EXPECT_DOUBLE_EQ(r.kernels[2].runtime.total_ns, 1100.0);
  ASSERT_EQ(r.helper_kernels.size(), 1u);
  EXPECT_EQ(r.helper_kernels[0].runtime.name, "__amd_rocclr_fillBufferAligned");
  EXPECT_EQ(r.helper_kernels[0].runtime.count, 2u);
  EXPECT_EQ(r.dominant_kernel, "gemm");
}

TEST_F(stages_profile_report_builder, stability_is_across_runs_and_totals_over_all) {
  const profile_report r = build();
  // User kernels per run: 15000 ns and 16500 ns.
  EXPECT_EQ(r.stability.per_run_ns, (std::vector<double>{15000.0, 16500.0}));
  EXPECT_DOUBLE_EQ(r.stability.median_ns, 15750.0);
  EXPECT_DOUBLE_EQ(r.stability.stddev_ns, 1500.0 / std::sqrt(2.0));
  EXPECT_NEAR(r.stability.cv, 0.067344, 1e-6);
  EXPECT_EQ(r.stability.classification, stability_class::moderate);
  ASSERT_TRUE(r.totals.has_value());
  EXPECT_DOUBLE_EQ(r.totals->gpu_time_ns, 31500.0);
  EXPECT_DOUBLE_EQ(r.totals->helper_gpu_time_ns, 600.0);
  EXPECT_EQ(r.totals->dispatches, 14u);
  EXPECT_DOUBLE_EQ(r.totals->wall_span_ns, static_cast<double>(last_end_ - 1'000'000));
  ASSERT_EQ(r.totals->per_process.size(), 2u);
  EXPECT_EQ(r.totals->per_process[0].name, "pid 200"); // the larger total first
  EXPECT_DOUBLE_EQ(r.totals->per_process[0].total_ns, 16800.0);
  // Both files name the same GPU: one agent.
  ASSERT_EQ(r.agents.size(), 1u);
  EXPECT_EQ(r.agents[0].name, "gfx90a");
  EXPECT_EQ(r.agents[0].product_name, "AMD Instinct MI210");
  EXPECT_EQ(r.databases, (std::vector<std::string>{(dir_ / "run-1" / "100_results.db").string(),
                                                   (dir_ / "run-2" / "200_results.db").string()}));
  EXPECT_EQ(r.backend, "rocm");
  EXPECT_EQ(r.command, (std::vector<std::string>{"./app", "--size", "1024"}));
}

TEST_F(stages_profile_report_builder, resources_and_occupancy_use_the_dispatch_lds) {
  const profile_report r = build();
  const kernel_report& gemm = r.kernels[0];
  EXPECT_EQ(gemm.block, (dim3{256, 1, 1})); // five of six launches
  EXPECT_EQ(gemm.grid, (dim3{256 * 1024, 1, 1}));
  ASSERT_TRUE(gemm.resources.has_value());
  EXPECT_EQ(gemm.resources->vgpr, 128);
  EXPECT_EQ(gemm.resources->sgpr, 48);
  EXPECT_EQ(gemm.resources->lds_bytes, 16384); // the symbol's static part, as recorded
  EXPECT_EQ(gemm.launch_lds_bytes, 32768);     // the dispatches', dynamic included
  EXPECT_EQ(gemm.resources->scratch_bytes, 8);
  EXPECT_EQ(gemm.resources->kernarg_bytes, 24);
  // 128 VGPRs allow 4 waves per SIMD, but 32 KiB of LDS per 4-wave workgroup leaves 2
  // workgroups per 64 KiB CU: 8 waves per CU, 2 per SIMD.
  ASSERT_TRUE(gemm.occupancy.has_value());
  EXPECT_EQ(gemm.occupancy->target, "gfx90a");
  EXPECT_EQ(gemm.occupancy->threads_per_block, 256u);
  EXPECT_EQ(gemm.occupancy->lds_bytes, 32768u);
  EXPECT_EQ(gemm.occupancy->result.active_waves_per_simd, 2u);
  EXPECT_EQ(gemm.occupancy->result.limiter, occupancy_limiter::lds);
  EXPECT_FALSE(gemm.occupancy_note.has_value());
  // Without a symbol row there is nothing to compute from.
  EXPECT_FALSE(r.kernels[2].resources.has_value());
  EXPECT_FALSE(r.kernels[2].occupancy.has_value());
  // Helpers keep their resources but get no occupancy.
  ASSERT_TRUE(r.helper_kernels[0].resources.has_value());
  EXPECT_EQ(r.helper_kernels[0].resources->vgpr, 16);
  EXPECT_FALSE(r.helper_kernels[0].occupancy.has_value());
}

TEST_F(stages_profile_report_builder, arch_overrides_the_agent_and_an_unknown_one_is_a_note) {
  const profile_report mi300 = build("gfx942");
  ASSERT_TRUE(mi300.kernels[0].occupancy.has_value());
  EXPECT_EQ(mi300.kernels[0].occupancy->target, "gfx942");
  const profile_report unknown = build("gfx1201");
  EXPECT_FALSE(unknown.kernels[0].occupancy.has_value());
  ASSERT_TRUE(unknown.kernels[0].occupancy_note.has_value());
  EXPECT_NE(unknown.kernels[0].occupancy_note->find("unknown target 'gfx1201'"), std::string::npos)
      << *unknown.kernels[0].occupancy_note;
}

TEST_F(stages_profile_report_builder, a_trace_without_dispatches_names_the_files_and_a_fix) {
  write_run(dir_ / "empty" / "300_results.db", 300, "gfx90a", 0, {});
  try {
    build_profile_report({{dir_ / "empty"}}, report_context{});
    FAIL() << "no report_error";
  } catch (const report_error& error) {
    const std::string text = error.what();
    EXPECT_EQ(text, (dir_ / "empty" / "300_results.db").string() +
                        ": no kernel dispatches in the trace; fix: check that the application "
                        "launches GPU kernels and was recorded with rocprofv3 --kernel-trace");
  }
}

TEST_F(stages_profile_report_builder, occupancy_is_of_the_most_common_block_with_its_own_lds) {
  // reduce: block 256 three times (8 KiB twice, 12 KiB once), block 128 twice with 12 KiB. The
  // most common LDS over all launches (12 KiB) never ran with the most common block.
  write_run(dir_ / "mixed" / "400_results.db", 400, "gfx90a", 0,
            {{2, 1000, 256, 8192},
             {2, 1000, 256, 8192},
             {2, 1000, 256, 12288},
             {2, 1000, 128, 12288},
             {2, 1000, 128, 12288}});
  const profile_report r = build_profile_report({{dir_ / "mixed"}}, report_context{});
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].block, (dim3{256, 1, 1}));
  EXPECT_EQ(r.kernels[0].launch_lds_bytes, 8192);
  ASSERT_TRUE(r.kernels[0].occupancy.has_value());
  EXPECT_EQ(r.kernels[0].occupancy->lds_bytes, 8192u);
}

TEST_F(stages_profile_report_builder, a_complete_or_unmarked_trace_is_not_partial) {
  write_run(dir_ / "complete" / "500_results.db", 500, "gfx90a", 0, {{1, 1000}},
            {.end = rocpd::trace_end::complete, .checkpoint_period_ms = 500});
  EXPECT_FALSE(build_profile_report({{dir_ / "complete"}}, report_context{}).partial);
  const profile_report unmarked = build(); // rocprofv3 writes no mark
  EXPECT_FALSE(unmarked.partial);
  EXPECT_TRUE(unmarked.partial_reasons.empty());
  EXPECT_EQ(to_json(unmarked)["partial"], false);
}

TEST_F(stages_profile_report_builder, a_database_that_is_not_the_final_write_makes_it_partial) {
  const auto checkpoint = dir_ / "cut" / "run-1" / "600_results.db";
  const auto signalled = dir_ / "cut" / "run-2" / "700_results.db";
  write_run(checkpoint, 600, "gfx90a", 0, {{1, 1000}, {2, 500}},
            {.end = rocpd::trace_end::checkpoint, .checkpoint_period_ms = 500});
  write_run(signalled, 700, "gfx90a", 0, {{1, 1000}},
            {.end = rocpd::trace_end::signal, .signal = "SIGABRT", .checkpoint_period_ms = 500});
  const profile_report r = build_profile_report(
      {{checkpoint.parent_path()}, {signalled.parent_path()}}, {.backend = "rocpd"});
  EXPECT_TRUE(r.partial);
  EXPECT_EQ(r.partial_reasons,
            (std::vector<std::string>{
                checkpoint.string() +
                    ": the tracer's last checkpoint: the process ended without a final write "
                    "(killed by SIGKILL, _exit(), or a crash the tracer could not catch), so "
                    "kernels that ran within the last 500 ms (the checkpoint period) before it "
                    "ended may be missing",
                signalled.string() + ": written when the process received SIGABRT, before it "
                                     "ended: kernels still running then are missing"}));
  // What was kept is reported as usual.
  EXPECT_EQ(r.totals->dispatches, 3u);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(rpl::testing::schema_errors(j, "profile.schema.json"), std::vector<std::string>{});
  EXPECT_EQ(j["partial"], true);
  EXPECT_EQ(j["partial_reasons"].size(), 2u);
  EXPECT_NE(report_text(r).find("\npartial trace: " + checkpoint.string()), std::string::npos);
}

/// An NVIDIA trace as the CUPTI tracer writes it (through stages/trace/cupti_mapping): `plain` and
/// `staged` both run 128 threads with 32 registers; staged asks for 48 KiB of dynamic shared
/// memory per block, which CUPTI records per launch and not in the kernel's static size.
TEST(stages_profile_report_builder_nvidia, dynamic_shared_memory_lowers_occupancy_and_limits_it) {
  rpl::testing::temp_dir dir;
  cupti::cupti_trace trace;
  trace.host.pid = 77;
  trace.host.hostname = "gpuhost";
  trace.start_ns = 1000;
  trace.end_ns = 100'000;
  cupti::driver_device h100;
  h100.available = true;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.compute_capability_major = 9;
  h100.compute_capability_minor = 0;
  trace.driver_devices[0] = h100;
  const auto launch = [](std::string_view name, std::uint64_t start_ns, std::int32_t dynamic) {
    cupti::kernel_record k;
    k.name = name;
    k.context_id = 1;
    k.stream_id = 7;
    k.start_ns = start_ns;
    k.end_ns = start_ns + 1000;
    k.grid[0] = 264;
    k.block[0] = 128;
    k.registers_per_thread = 32;
    k.dynamic_shared_memory = dynamic;
    return k;
  };
  trace.kernels = {launch("_Z5plainPf", 2000, 0), launch("_Z6stagedPf", 4000, 48 * 1024),
                   launch("_Z6stagedPf", 6000, 48 * 1024)};
  std::filesystem::create_directories(dir / "run-1");
  {
    rocpd::writer writer(dir / "run-1" / "77_results.db");
    cupti::writer_sink sink(writer);
    cupti::map_trace(trace, sink);
    writer.commit();
  }
  const profile_report r = build_profile_report({{dir / "run-1"}}, {.backend = "cuda"});
  ASSERT_EQ(r.kernels.size(), 2u);
  const kernel_report& staged = r.kernels[0]; // the larger total
  const kernel_report& plain = r.kernels[1];
  ASSERT_EQ(staged.runtime.name, "staged(float*)");
  ASSERT_TRUE(staged.occupancy.has_value() && plain.occupancy.has_value());
  EXPECT_EQ(staged.occupancy->target, "sm_90");
  // 48 KiB + the 1 KiB the driver reserves per block: 4 blocks in 228 KiB, 16 of 64 warps.
  EXPECT_EQ(staged.resources->lds_bytes, 0); // no static shared memory
  EXPECT_EQ(staged.launch_lds_bytes, 48 * 1024);
  EXPECT_EQ(staged.occupancy->lds_bytes, 48u * 1024);
  EXPECT_EQ(staged.occupancy->result.active_workgroups_per_cu, 4u);
  EXPECT_EQ(staged.occupancy->result.active_waves_per_simd, 16u);
  EXPECT_EQ(staged.occupancy->result.limiter, occupancy_limiter::shared_memory);
  // The same kernel body without it: 16 blocks, every warp slot.
  EXPECT_EQ(plain.occupancy->result.active_workgroups_per_cu, 16u);
  EXPECT_EQ(plain.occupancy->result.active_waves_per_simd, 64u);
  EXPECT_NE(plain.occupancy->result.limiter, occupancy_limiter::shared_memory);
  EXPECT_EQ(to_json(r)["occupancy"]["limiter"], "shared_memory"); // staged dominates
}

TEST(stages_profile_report_builder_timing, wall_times_become_the_stability_and_a_note) {
  const std::vector<std::int64_t> wall_ns = {3'000'000, 1'000'000, 2'000'000};
  const profile_report r = timing_profile_report({"./app"}, wall_ns);
  EXPECT_EQ(r.backend, "timing");
  EXPECT_EQ(r.stability.per_run_ns, (std::vector<double>{3e6, 1e6, 2e6})); // run order kept
  EXPECT_DOUBLE_EQ(r.stability.median_ns, 2e6);
  EXPECT_DOUBLE_EQ(r.stability.mean_ns, 2e6);
  EXPECT_DOUBLE_EQ(r.stability.cv, 0.5);
  EXPECT_EQ(r.stability.classification, stability_class::unstable);
  EXPECT_FALSE(r.totals.has_value());
  EXPECT_TRUE(r.kernels.empty());
  ASSERT_TRUE(r.note.has_value());
  EXPECT_NE(r.note->find("whole-process wall times"), std::string::npos);
}

TEST_F(stages_profile_report_builder, renders_schema_valid_json_and_the_golden_text) {
  const profile_report r = build();
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(rpl::testing::schema_errors(j, "profile.schema.json"), std::vector<std::string>{});
  EXPECT_DOUBLE_EQ(j["runtime_ms"].get<double>(), 0.01575);
  EXPECT_EQ(j["kernel"],
            nlohmann::json({{"name", "gemm"}, {"grid", {262144, 1, 1}}, {"block", {256, 1, 1}}}));
  EXPECT_EQ(j["occupancy"]["limiter"], "lds");
  EXPECT_EQ(j["occupancy"]["target"], "gfx90a");
  EXPECT_EQ(j["kernels"][2]["resources"], nullptr);
  EXPECT_EQ(j["totals"]["dispatches"], 14);
  // One agent, so no per-agent line; two processes, so per queue, stream and process.
  EXPECT_EQ(report_text(r),
            "backend rocm, 2 run(s): GPU time per run median 0.016 ms (mean 0.016, cv 0.0673, "
            "moderate)\n"
            "agent gfx90a (AMD Instinct MI210)\n"
            "all runs: 14 dispatches, GPU time 0.032 ms, runtime helpers 0.001 ms, wall span "
            "1.023 ms\n"
            "\n"
            "kernel                                     calls    total ms    mean us  median us "
            "    p95 us      cv  share  VGPR  AGPR  SGPR     LDS  occupancy\n"
            "gemm                                           6       0.026       4.30       4.30 "
            "      4.60   0.055  81.9%   128     0    48   32768  2/8 waves per SIMD (25%, lds)\n"
            "reduce                                         4       0.005       1.15       1.15 "
            "      1.30   0.112  14.6%    32     0    24    4096  8/8 waves per SIMD (100%, "
            "waves)\n"
            "<unknown kernel 9>                             2       0.001       0.55       0.55 "
            "      0.60   0.129   3.5%     -     -     -       -  -\n"
            "runtime helper: __amd_rocclr_fillBufferAligned, 2 dispatches, 0.001 ms\n"
            "\n"
            "dominant kernel: gemm\n"
            "  to raise occupancy: with at most 21 KiB LDS per workgroup: 3 waves per SIMD "
            "(37.5%)\n"
            "  to raise occupancy: with at most 16 KiB LDS per workgroup: 4 waves per SIMD (50%), "
            "then limited by vgprs\n"
            "per queue:  Default Queue (pid 200) 0.017 ms (7)  Default Queue (pid 100) 0.015 ms "
            "(7)\n"
            "per stream:  Default Stream (pid 200) 0.017 ms (7)  Default Stream (pid 100) 0.015 "
            "ms (7)\n"
            "per process:  pid 200 0.017 ms (7)  pid 100 0.015 ms (7)\n");
}

} // namespace
} // namespace rpl::stages
