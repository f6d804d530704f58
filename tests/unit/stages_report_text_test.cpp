// profile_report → terminal text (stages/analysis/report_text.hpp), from hand-built reports.

#include <gtest/gtest.h>

#include "stages/analysis/report_text.hpp"

namespace rpl::stages {
namespace {

kernel_report kernel(std::string name, std::size_t count, double total_ns) {
  kernel_report k;
  k.runtime.name = std::move(name);
  k.runtime.count = count;
  k.runtime.total_ns = total_ns;
  k.runtime.mean_ns = total_ns / static_cast<double>(count);
  k.runtime.median_ns = k.runtime.mean_ns;
  k.runtime.p95_ns = k.runtime.mean_ns;
  k.runtime.cv = 0.01;
  k.share = 0.5;
  return k;
}

/// An NVIDIA trace on two GPUs: one kernel with a long name and resources, one without a symbol.
profile_report nvidia_report() {
  profile_report r;
  r.backend = "cuda";
  r.agents = {{"sm_90", "NVIDIA H100", 0}, {"sm_90", "NVIDIA H100", 1}};
  r.stability = {{1e6}, 1e6, 1e6, 0, 0, stability_class::stable};
  r.totals = report_totals{};
  r.totals->gpu_time_ns = 1e6;
  r.totals->dispatches = 3;
  r.totals->per_agent = {{"sm_90 (agent 0)", 2, 600'000}, {"sm_90 (agent 1)", 1, 400'000}};
  r.totals->per_process = {{"pid 7", 3, 1e6}};
  kernel_report big = kernel("void tiled_gemm<float, 128, 4>(float const*, float*, int)", 2, 5e5);
  big.resources = symbol_resources{.vgpr = 168, .lds_bytes = 49152};
  occupancy_result o;
  o.active_waves_per_simd = 8;
  o.max_waves_per_simd = 64;
  o.occupancy = 0.125;
  o.limiter = occupancy_limiter::registers;
  o.unit = "warps per SM";
  o.suggestions = {"with at most 128 registers per thread: 16 warps per SM (25%)"};
  big.occupancy = kernel_occupancy{"sm_90", 256, o};
  r.kernels = {big, kernel("reduce", 1, 5e5)};
  r.dominant_kernel = big.runtime.name;
  return r;
}

TEST(stages_report_text, nvidia_agents_name_registers_and_shared_memory) {
  EXPECT_EQ(report_text(nvidia_report()),
            "backend cuda, 1 run(s): GPU time per run median 1.000 ms (mean 1.000, cv 0.0000, "
            "stable)\n"
            "agent sm_90 (NVIDIA H100)\n"
            "agent sm_90 (NVIDIA H100)\n"
            "all runs: 3 dispatches, GPU time 1.000 ms, runtime helpers 0.000 ms, wall span "
            "0.000 ms\n"
            "\n"
            "kernel                                     calls    total ms    mean us  median us "
            "    p95 us      cv  share  REGS  AGPR  SGPR    SMEM  occupancy\n"
            "void tiled_gemm<float, 128, 4>(float ...       2       0.500     250.00     250.00 "
            "    250.00   0.010  50.0%   168     0     0   49152  8/64 warps per SM (12%, "
            "registers)\n"
            "reduce                                         1       0.500     500.00     500.00 "
            "    500.00   0.010  50.0%     -     -     -       -  -\n"
            "\n"
            "dominant kernel: void tiled_gemm<float, 128, 4>(float const*, float*, int)\n"
            "  to raise occupancy: with at most 128 registers per thread: 16 warps per SM (25%)\n"
            "per agent:  sm_90 (agent 0) 0.600 ms (2)  sm_90 (agent 1) 0.400 ms (1)\n");
}

TEST(stages_report_text, the_timing_backend_prints_the_summary_and_its_note_only) {
  profile_report r;
  r.backend = "timing";
  r.stability = {{1'234'567, 1'234'569}, 1'234'568, 1'234'568, 1.4142, 0.0000011,
                 stability_class::stable};
  r.note = "timing backend: whole-process wall times";
  EXPECT_EQ(report_text(r),
            "backend timing, 2 run(s): process wall time per run median 1.235 ms (mean 1.235, "
            "cv 0.0000, stable)\n"
            "note: timing backend: whole-process wall times\n");
}

TEST(stages_report_text, no_dominant_kernel_means_no_suggestions) {
  profile_report r = nvidia_report();
  r.dominant_kernel.clear();
  const std::string text = report_text(r);
  EXPECT_EQ(text.find("dominant kernel"), std::string::npos) << text;
  EXPECT_EQ(text.find("to raise occupancy"), std::string::npos) << text;
}

TEST(stages_report_text, a_partial_trace_says_why_under_the_summary) {
  profile_report r = nvidia_report();
  r.partial = true;
  r.partial_reasons = {"run 1: the application ended abnormally: ./app was killed by SIGABRT",
                       "/t/1_results.db: written when the process received SIGABRT"};
  const std::string text = report_text(r);
  EXPECT_EQ(text.substr(0, text.find("agent ")),
            "backend cuda, 1 run(s): GPU time per run median 1.000 ms (mean 1.000, cv 0.0000, "
            "stable)\n"
            "partial trace: run 1: the application ended abnormally: ./app was killed by SIGABRT\n"
            "partial trace: /t/1_results.db: written when the process received SIGABRT\n");
}

TEST(stages_report_text, the_shared_memory_column_is_the_launchs_dynamic_included) {
  profile_report r = nvidia_report();
  r.kernels[0].launch_lds_bytes = 49152 + 16384; // 16 KiB of dynamic shared memory on top
  const std::string text = report_text(r);
  EXPECT_NE(text.find("   168     0     0   65536  8/64 warps per SM"), std::string::npos) << text;
}

} // namespace
} // namespace rpl::stages
