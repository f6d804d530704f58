// Roofline formulas against hand-computed values: AMD gfx942 from three counter passes recorded as
// three rocpd databases (AMD's schema, our writer), and NVIDIA sm_90 from Nsight Compute metrics.
#include <gtest/gtest.h>

#include "stages/analysis/kernel_roofline.hpp"
#include "stages/hardware/arch_model.hpp"
#include "stages/trace/rocpd_writer.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::analysis {
namespace {

using rpl::testing::temp_dir;

/// One counter pass: two dispatches of kernel "k" on a gfx942 agent, each with `counters` (name ->
/// instance values: one row per instance, as rocprofv3 writes per-XCD counters).
void write_pass(const std::filesystem::path& path,
                const std::vector<std::pair<std::string, std::vector<double>>>& counters) {
  rocpd::writer w(path);
  rocpd::node_info node;
  w.add_node(node);
  rocpd::process_info process;
  process.pid = 9;
  w.add_process(process);
  rocpd::thread_info thread;
  thread.pid = 9;
  thread.tid = 9;
  w.add_thread(thread);
  rocpd::agent_info agent;
  agent.pid = 9;
  agent.absolute_index = 1;
  agent.name = "gfx942";
  agent.product_name = "AMD Instinct MI300X";
  w.add_agent(agent);
  rocpd::code_object_info code;
  code.id = 1;
  code.pid = 9;
  code.agent_id = 1;
  w.add_code_object(code);
  rocpd::kernel_symbol_info symbol;
  symbol.id = 1;
  symbol.pid = 9;
  symbol.code_object_id = 1;
  symbol.kernel_name = "void k<64>(float*, int)";
  w.add_kernel_symbol(symbol);
  std::map<std::string, std::int64_t> ids;
  for (const auto& [name, values] : counters) {
    rocpd::pmc_info info;
    info.pid = 9;
    info.agent_id = 1;
    info.name = name;
    ids[name] = w.add_pmc_info(info);
  }
  for (int i = 0; i < 2; ++i) {
    rocpd::dispatch_info d;
    d.pid = 9;
    d.tid = 9;
    d.agent_id = 1;
    d.kernel_id = 1;
    d.start_ns = 1000 + i * 10000;
    d.end_ns = d.start_ns + 2000; // the passes' own durations: 2 us (serialized)
    w.add_dispatch(d);
    const auto event = w.last_event_id();
    for (const auto& [name, values] : counters)
      for (const double v : values)
        w.add_pmc_event(event, ids[name], v);
  }
  w.commit();
}

std::map<std::string, rocpd::kernel_counters> three_passes(const temp_dir& dir, double rdreq) {
  write_pass(dir / "pass1.db", {{"SQ_INSTS_VALU_ADD_F32", {100}},
                                {"SQ_INSTS_VALU_MUL_F32", {50}},
                                {"SQ_INSTS_VALU_TRANS_F32", {10}},
                                {"SQ_INSTS_VALU_FMA_F32", {600, 400}}, // per instance: 1000
                                {"SQ_INSTS_VALU_ADD_F16", {0}},
                                {"SQ_INSTS_VALU_MUL_F16", {0}},
                                {"SQ_INSTS_VALU_TRANS_F16", {0}},
                                {"SQ_INSTS_VALU_FMA_F16", {200}}});
  write_pass(dir / "pass2.db", {{"SQ_INSTS_VALU_ADD_F64", {0}},
                                {"SQ_INSTS_VALU_MUL_F64", {0}},
                                {"SQ_INSTS_VALU_TRANS_F64", {0}},
                                {"SQ_INSTS_VALU_FMA_F64", {0}},
                                {"SQ_INSTS_VALU_MFMA_MOPS_F16", {1000}},
                                {"SQ_INSTS_VALU_MFMA_MOPS_BF16", {0}},
                                {"SQ_INSTS_VALU_MFMA_MOPS_F32", {10}},
                                {"SQ_INSTS_VALU_MFMA_MOPS_F64", {0}}});
  write_pass(dir / "pass3.db", {{"TCC_BUBBLE_sum", {10}},
                                {"TCC_EA0_RDREQ_sum", {rdreq}},
                                {"TCC_EA0_RDREQ_32B_sum", {100}},
                                {"TCC_EA0_WRREQ_sum", {500}},
                                {"TCC_EA0_WRREQ_64B_sum", {200}}});
  return rocpd::read_kernel_counters({dir / "pass1.db", dir / "pass2.db", dir / "pass3.db"});
}

TEST(stages_kernel_roofline, gfx942_from_three_passes_equals_the_formulas_by_hand) {
  temp_dir dir;
  const auto counters = three_passes(dir, 1000);
  ASSERT_EQ(counters.size(), 1u);
  const auto& k = counters.at("k<64>"); // matched without "void " and the arguments
  EXPECT_EQ(k.dispatches, 6u);          // 2 per pass
  EXPECT_EQ(k.counters.at("SQ_INSTS_VALU_FMA_F32").sum, 2000); // 600 + 400, twice
  const auto roofs = peaks_for(load_arch("gfx942"), "AMD Instinct MI300X");
  // MFMA F16 peak: 2048 FLOP/clk/CU x 304 CUs x 2100 MHz = 1.3074432e15; HBM 5.3248e12 B/s.
  EXPECT_DOUBLE_EQ(roofs.flops_per_s.at("mfma_f16"), 2048.0 * 304 * 2100e6);
  EXPECT_DOUBLE_EQ(*roofs.bytes_per_s, 5.3248e12);
  const auto outcome = compute_roofline(k, roofs, 1000.0); // traced mean duration: 1 us
  ASSERT_TRUE(outcome.roofline) << outcome.missing;
  const auto& r = *outcome.roofline;
  // VALU F32: 64 x (100 + 50 + 10 + 2 x 1000) = 138,240; F16: 64 x (2 x 200) = 25,600; F64: 0.
  EXPECT_DOUBLE_EQ(r.flops.at("valu_f32"), 138240);
  EXPECT_DOUBLE_EQ(r.flops.at("valu_f16"), 25600);
  EXPECT_DOUBLE_EQ(r.flops.at("valu_f64"), 0);
  // MFMA: F16 512 x 1000 = 512,000; F32 512 x 10 = 5,120.
  EXPECT_DOUBLE_EQ(r.flops.at("mfma_f16"), 512000);
  EXPECT_DOUBLE_EQ(r.flops.at("mfma_f32"), 5120);
  EXPECT_DOUBLE_EQ(r.total_flops, 680960);
  EXPECT_EQ(r.dominant_type, "mfma_f16");
  // HBM: 128 x 10 + 32 x 100 + 64 x (1000 - 10 - 100) + 32 x (500 - 200) + 64 x 200
  //    = 1,280 + 3,200 + 56,960 + 9,600 + 12,800 = 83,840 bytes.
  EXPECT_DOUBLE_EQ(*r.dram_bytes, 83840);
  EXPECT_DOUBLE_EQ(*r.intensity, 680960.0 / 83840.0);
  // Per second over 1 us: 6.8096e11 FLOP/s, 8.384e10 B/s.
  EXPECT_DOUBLE_EQ(r.flops_per_s, 6.8096e11);
  EXPECT_DOUBLE_EQ(*r.bytes_per_s, 8.384e10);
  EXPECT_DOUBLE_EQ(*r.percent_of_compute_peak, 100 * 6.8096e11 / (2048.0 * 304 * 2100e6));
  EXPECT_DOUBLE_EQ(*r.percent_of_memory_peak, 100 * 8.384e10 / 5.3248e12);
  // Ridge 1.3074432e15 / 5.3248e12 = 245.5 FLOP/B; intensity 8.12 < ridge: memory bound.
  EXPECT_DOUBLE_EQ(*r.ridge_point, 2048.0 * 304 * 2100e6 / 5.3248e12);
  EXPECT_EQ(r.bound, "memory");
  // Per dispatch: the n-th dispatch of each pass is one launch (2 of them), each over the last
  // pass's 2 us: 680,960 FLOPs and 83,840 bytes each, 3.4048e11 FLOP/s.
  const auto per_dispatch = dispatch_rooflines(k, roofs);
  ASSERT_EQ(per_dispatch.size(), 2u);
  ASSERT_TRUE(per_dispatch[1]);
  EXPECT_DOUBLE_EQ(per_dispatch[1]->total_flops, 680960);
  EXPECT_DOUBLE_EQ(*per_dispatch[1]->dram_bytes, 83840);
  EXPECT_DOUBLE_EQ(per_dispatch[1]->flops_per_s, 680960 / 2e-6);
  EXPECT_EQ(per_dispatch[1]->bound, "memory");
  // Without the traced duration, the passes' own 2 us.
  EXPECT_DOUBLE_EQ(compute_roofline(k, roofs, std::nullopt).roofline->duration_ns, 2000);
}

TEST(stages_kernel_roofline, a_negative_byte_term_is_reported_and_missing_counters_named) {
  temp_dir dir;
  // TCC_EA0_RDREQ 50 < TCC_BUBBLE 10 + TCC_EA0_RDREQ_32B 100: the formula goes negative.
  const auto counters = three_passes(dir, 50);
  const auto roofs = peaks_for(load_arch("gfx942"), "AMD Instinct MI300X");
  const auto bad = compute_roofline(counters.at("k<64>"), roofs, 1000.0);
  EXPECT_FALSE(bad.roofline);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_NE(bad.problems[0].find("TCC_EA0_RDREQ - TCC_BUBBLE - TCC_EA0_RDREQ_32B = -60"),
            std::string::npos)
      << bad.problems[0];
  // Only the first two passes: no HBM counters, so no roofline, never zeros.
  const auto partial = rocpd::read_kernel_counters({dir / "pass1.db", dir / "pass2.db"});
  const auto missing = compute_roofline(partial.at("k<64>"), roofs, 1000.0);
  EXPECT_FALSE(missing.roofline);
  EXPECT_NE(missing.missing.find("TCC_BUBBLE, TCC_EA0_RDREQ, TCC_EA0_RDREQ_32B"), std::string::npos)
      << missing.missing;
}

TEST(stages_kernel_roofline, sm_90_from_nsight_compute_metrics) {
  // The tiled SGEMM of tests/fixtures/ncu (1024^3): 1,073,741,824 FFMAs, 8,404,736 DRAM bytes
  // read, none written, 160,384 ns.
  rocpd::kernel_counters k;
  k.name = "sgemm_tiled(const float *, const float *, float *, int, int, int)";
  k.target = "sm_90";
  k.dispatches = 1;
  k.duration_sum_ns = 160384;
  auto put = [&](const std::string& name, double v) { k.counters[name] = {v, 1}; };
  for (const char* op : {"fadd", "fmul", "dadd", "dmul", "dfma", "hadd", "hmul", "hfma"})
    put(std::string("smsp__sass_thread_inst_executed_op_") + op + "_pred_on.sum", 0);
  put("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 1073741824);
  for (const char* t :
       {"hgmma_src_bf16_dst_fp32", "hmma_src_bf16_dst_fp32", "hgmma_src_fp16",
        "hmma_src_fp16_dst_fp32", "hgmma_src_tf32_dst_fp32", "hmma_src_tf32_dst_fp32"})
    put(std::string("sm__ops_path_tensor_op_") + t + "_sparsity_off.sum", 0);
  put("dram__bytes_read.sum", 8404736);
  put("dram__bytes_write.sum", 0);
  put("sm__throughput.avg.pct_of_peak_sustained_elapsed", 46.79);
  put("smsp__thread_inst_executed_per_inst_executed.ratio", 32);
  // Stalls: 9 of a 20-cycle latency per instruction on long_scoreboard (0.45), 2 on barrier.
  put("smsp__average_warp_latency_per_inst_issued.ratio", 20);
  put("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 9);
  put("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", 2);
  put("smsp__issue_active.avg.per_cycle_active", 0.25);
  const auto roofs = peaks_for(load_arch("sm_90"), "NVIDIA H200");
  EXPECT_EQ(roofs.product, "NVIDIA H200 SXM");
  // FP32 peak: 2 x 128 FFMA/clk/SM x 132 SMs x 1980 MHz = 6.690816e13 FLOP/s; HBM 4.8e12 B/s.
  EXPECT_DOUBLE_EQ(roofs.flops_per_s.at("fp32"), 2.0 * 128 * 132 * 1980e6);
  const auto outcome = compute_roofline(k, roofs, std::nullopt);
  ASSERT_TRUE(outcome.roofline) << outcome.missing;
  const auto& r = *outcome.roofline;
  // FLOPs = 2 x 1,073,741,824 = 2,147,483,648; over 160,384 ns = 1.33896...e13 FLOP/s.
  EXPECT_DOUBLE_EQ(r.total_flops, 2147483648.0);
  EXPECT_EQ(r.dominant_type, "fp32");
  EXPECT_DOUBLE_EQ(r.flops_per_s, 2147483648.0 / 160384e-9);
  EXPECT_DOUBLE_EQ(*r.intensity, 2147483648.0 / 8404736.0); // 255.5 FLOP/B
  EXPECT_DOUBLE_EQ(*r.percent_of_compute_peak,
                   100 * (2147483648.0 / 160384e-9) / (2.0 * 128 * 132 * 1980e6)); // 20.0 %
  // Ridge 6.690816e13 / 4.8e12 = 13.9 FLOP/B < 255.5: compute bound.
  EXPECT_EQ(r.bound, "compute");
  EXPECT_DOUBLE_EQ(*r.sol_compute_pct, 46.79);
  EXPECT_DOUBLE_EQ(*r.active_thread_fraction, 1.0);
  EXPECT_EQ(r.top_stall, "long_scoreboard");
  EXPECT_DOUBLE_EQ(*r.top_stall_share, 0.45);
  EXPECT_DOUBLE_EQ(*r.issue_active, 0.25);
  // The H100 SXM5 as the driver names it is an alias; a name configs/arch does not know gets the
  // first product, said so.
  const auto h100 = peaks_for(load_arch("sm_90"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.product, "NVIDIA H100 SXM5");
  EXPECT_TRUE(h100.notes.empty());
  const auto unknown = peaks_for(load_arch("sm_90"), "NVIDIA GH200 480GB");
  EXPECT_EQ(unknown.product, "NVIDIA H100 SXM5");
  ASSERT_FALSE(unknown.notes.empty());
  EXPECT_NE(unknown.notes[0].find("assumed NVIDIA H100 SXM5"), std::string::npos);
  // On sm_80 (no wgmma) the hgmma counters are not needed: without them the roofline stands.
  rocpd::kernel_counters ampere = k;
  ampere.target = "sm_80";
  for (auto it = ampere.counters.begin(); it != ampere.counters.end();)
    it = it->first.find("_hgmma_") != std::string::npos ? ampere.counters.erase(it) : std::next(it);
  EXPECT_TRUE(compute_roofline(ampere, roofs, std::nullopt).roofline);
  k.counters.erase("sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum");
  EXPECT_NE(compute_roofline(k, roofs, std::nullopt).missing.find("hgmma_src_fp16"),
            std::string::npos);
  // Overrides win.
  EXPECT_DOUBLE_EQ(*peaks_for(load_arch("sm_90"), "NVIDIA H200", {{"hbm", 4e12}}).bytes_per_s,
                   4e12);
}

} // namespace
} // namespace rpl::stages::analysis
