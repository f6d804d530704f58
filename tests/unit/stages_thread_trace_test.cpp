// AMD thread-trace statistics (rocprofv3 --att's stats_*.csv and code.json) as stall summaries,
// from the hand-made fixtures in tests/fixtures/att/ (README there), with every sum by hand.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/trace/thread_trace.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::att {
namespace {

const std::filesystem::path fixtures = rpl::testing::source_dir / "tests/fixtures/att";

std::int64_t cycles(const stall_summary& s, stall_category c) {
  const auto it = s.stall_cycles.find(c);
  return it == s.stall_cycles.end() ? -1 : it->second;
}

/// reduce_sum's figures (run/stats_ui_output_agent_1_dispatch_3.csv), by hand:
///   latency 1280 + 256 + 2048 + 20480 + 1024 + 512 + 2560 + 3200 + 320 + 640 + 128 = 32448,
///   idle 64 + 32 + 128 + 256 + 64 = 544, so 32992 wave cycles; hitcounts sum to 1344.
///   Waits count their latency: vmcnt 20480, lgkmcnt 2560, barrier 3200. Others their stall:
///   s_load 256, the two global ops 512 + 128, ds_write 128, s_cbranch 64, VALU 0, s_endpgm 0.
///   Execution is the rest: 1024 + 256 + 1536 + 1024 + 384 + 256 + 512 + 128 = 5120.
void expect_reduce_sum(const stall_summary& s) {
  EXPECT_EQ(s.kernel, "reduce_sum(float*, int)");
  EXPECT_EQ(s.symbol, "_Z10reduce_sumPfi");
  EXPECT_EQ(s.traces, 1u);
  EXPECT_EQ(s.instructions, 1344);
  EXPECT_EQ(s.wave_cycles, 32992);
  EXPECT_EQ(s.idle_cycles, 544);
  EXPECT_EQ(s.execute_cycles, 5120);
  EXPECT_EQ(cycles(s, stall_category::vmem_wait), 20480);
  EXPECT_EQ(cycles(s, stall_category::lds_smem_wait), 2560);
  EXPECT_EQ(cycles(s, stall_category::barrier), 3200);
  EXPECT_EQ(cycles(s, stall_category::smem_issue), 256);
  EXPECT_EQ(cycles(s, stall_category::vmem_issue), 640);
  EXPECT_EQ(cycles(s, stall_category::lds_issue), 128);
  EXPECT_EQ(cycles(s, stall_category::branch), 64);
  EXPECT_EQ(cycles(s, stall_category::valu), 0);
  EXPECT_EQ(cycles(s, stall_category::salu), 0);
  EXPECT_EQ(cycles(s, stall_category::mfma), -1); // never seen
  // The categories add up to the waves' time.
  std::int64_t sum = s.execute_cycles + s.idle_cycles;
  for (const auto& [category, n] : s.stall_cycles)
    sum += n;
  EXPECT_EQ(sum, s.wave_cycles);
  EXPECT_EQ(s.top, stall_category::vmem_wait);
  EXPECT_DOUBLE_EQ(s.top_share, 20480.0 / 32992.0);
  EXPECT_EQ(s.inconsistent_rows, 0u);
}

TEST(stages_thread_trace, categorizes_instructions_by_mnemonic_and_wait_counters) {
  EXPECT_EQ(categorize("s_waitcnt vmcnt(0)"), stall_category::vmem_wait);
  EXPECT_EQ(categorize("s_waitcnt vmcnt(0) lgkmcnt(0)"), stall_category::vmem_wait);
  EXPECT_EQ(categorize("s_waitcnt_vscnt null, 0x0"), stall_category::vmem_wait);
  EXPECT_EQ(categorize("s_wait_loadcnt 0x0"), stall_category::vmem_wait);       // gfx12
  EXPECT_EQ(categorize("s_wait_loadcnt_dscnt 0x0"), stall_category::vmem_wait); // gfx12
  EXPECT_EQ(categorize("s_waitcnt lgkmcnt(0)"), stall_category::lds_smem_wait);
  EXPECT_EQ(categorize("s_wait_dscnt 0x0"), stall_category::lds_smem_wait);
  EXPECT_EQ(categorize("s_wait_kmcnt 0x0"), stall_category::lds_smem_wait);
  EXPECT_EQ(categorize("s_waitcnt expcnt(0)"), stall_category::other_wait);
  EXPECT_EQ(categorize("s_waitcnt 0"), stall_category::other_wait);
  EXPECT_EQ(categorize("s_sleep 1"), stall_category::other_wait);
  EXPECT_EQ(categorize("s_barrier"), stall_category::barrier);
  EXPECT_EQ(categorize("s_barrier_wait 0xffff"), stall_category::barrier);
  // The prototype's order made these VALU and SALU (python-prototype-study §3.10).
  EXPECT_EQ(categorize("v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]"),
            stall_category::mfma);
  EXPECT_EQ(categorize("v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]"),
            stall_category::mfma);
  EXPECT_EQ(categorize("s_cbranch_scc1 65532"), stall_category::branch);
  EXPECT_EQ(categorize("buffer_load_dword v1, v0, s[0:3], 0 offen"), stall_category::vmem_issue);
  EXPECT_EQ(categorize("scratch_store_dword off, v1, s0"), stall_category::vmem_issue);
  EXPECT_EQ(categorize("  global_load_dwordx4 v[0:3], v4, s[0:1]"), stall_category::vmem_issue);
  EXPECT_EQ(categorize("ds_read_b128 v[8:11], v5"), stall_category::lds_issue);
  EXPECT_EQ(categorize("s_load_dwordx4 s[0:3], s[4:5], 0x0"), stall_category::smem_issue);
  EXPECT_EQ(categorize("s_buffer_load_dword s0, s[4:7], 0x0"), stall_category::smem_issue);
  EXPECT_EQ(categorize("v_add_f32_e32 v3, v3, v2"), stall_category::valu);
  EXPECT_EQ(categorize("s_mov_b32 s0, 0"), stall_category::salu);
  EXPECT_EQ(categorize("; reduce_sum"), stall_category::other);
  EXPECT_EQ(to_id(stall_category::lds_smem_wait), "lds_smem_wait");
}

TEST(stages_thread_trace, stats_csv_gives_hand_computed_stalls_per_kernel) {
  const auto blocks = parse_stats_csv(
      rpl::testing::read_text(fixtures / "run/stats_ui_output_agent_1_dispatch_3.csv"),
      "stats.csv");
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].symbol, "_Z10reduce_sumPfi");
  EXPECT_EQ(blocks[0].demangled, "reduce_sum(float*, int)");
  EXPECT_EQ(blocks[0].rows.size(), 11u);
  // Quoted instructions keep their commas.
  EXPECT_EQ(blocks[0].rows[0].instruction, "s_load_dwordx4 s[0:3], s[4:5], 0x0");
  EXPECT_EQ(blocks[0].rows[0].source, "reduce.hip:10");
  const auto summaries = summarize(blocks);
  // helper never issued: left out. In symbol order: reduce_sum, scale_kernel.
  ASSERT_EQ(summaries.size(), 2u);
  expect_reduce_sum(summaries[0]);
  const stall_summary& scale = summaries[1];
  EXPECT_EQ(scale.kernel, "scale_kernel(float*, float)");
  EXPECT_EQ(scale.instructions, 64);
  EXPECT_EQ(scale.wave_cycles, 128 + 64 + 16);
  EXPECT_EQ(scale.execute_cycles, 192);
}

TEST(stages_thread_trace, code_json_of_the_same_dispatch_gives_the_same_summary) {
  const auto blocks = parse_code_json(
      rpl::testing::read_text(fixtures / "run/ui_output_agent_1_dispatch_3/code.json"),
      "code.json");
  const auto summaries = summarize(blocks);
  ASSERT_EQ(summaries.size(), 1u);
  expect_reduce_sum(summaries[0]);
}

TEST(stages_thread_trace, mfma_loop_in_code_json_is_matrix_pipe_bound_by_hand) {
  // gemm_tile_code.json: latency 640 + 1536 + 4096 + 4096 + 2048 + 32768 + 256 + 64 = 45504, idle
  // 32 + 64 + 128 + 256 = 480: 45984 cycles. MFMA stall 16384 of 32768; vmcnt 4096, lgkmcnt 2048;
  // issue stalls s_load 128, global 256, ds_read 1024; execution 512 + 1280 + 3072 + 16384 + 256 +
  // 64 = 21568; hitcounts 32 + 128 + 128 + 512 + 512 + 1024 + 128 + 32 = 2496.
  const auto summaries =
      summarize(parse_code_json(rpl::testing::read_text(fixtures / "gemm_tile_code.json"), "g"));
  ASSERT_EQ(summaries.size(), 1u);
  const stall_summary& s = summaries[0];
  EXPECT_EQ(s.wave_cycles, 45984);
  EXPECT_EQ(s.execute_cycles, 21568);
  EXPECT_EQ(cycles(s, stall_category::mfma), 16384);
  EXPECT_EQ(cycles(s, stall_category::vmem_wait), 4096);
  EXPECT_EQ(cycles(s, stall_category::lds_smem_wait), 2048);
  EXPECT_EQ(cycles(s, stall_category::lds_issue), 1024);
  EXPECT_EQ(s.instructions, 2496);
  EXPECT_EQ(s.top, stall_category::mfma);
  EXPECT_DOUBLE_EQ(s.top_share, 16384.0 / 45984.0);
  const auto j = to_json(s);
  EXPECT_EQ(j["top_stall"], "mfma");
  EXPECT_DOUBLE_EQ(j["cycles_per_instruction"].get<double>(), 45984.0 / 2496.0);
  EXPECT_EQ(j["stall_cycles"]["mfma"], 16384);
}

TEST(stages_thread_trace, columns_are_found_by_name_and_dispatches_of_one_kernel_add_up) {
  // Reordered and extra columns, two traces of one kernel, a Windows line end.
  const std::string text = "Source,Idle,Stall,Latency,Hitcount,Instruction,Extra\r\n"
                           ",0,0,0,0,\"; k\",x\n"
                           "a:1,10,5,40,4,\"s_waitcnt vmcnt(0)\",x\n"
                           "a:2,0,2,8,4,\"v_add_f32 v0, v0, v1\",x\n"
                           ",0,0,0,0,\"; k\",x\n"
                           "a:2,2,30,20,4,\"v_add_f32 v0, v0, v1\",x\n";
  const auto summaries = summarize(parse_stats_csv(text, "t.csv"));
  ASSERT_EQ(summaries.size(), 1u);
  const stall_summary& s = summaries[0];
  EXPECT_EQ(s.kernel, "k"); // no demangled name: the symbol
  EXPECT_EQ(s.traces, 2u);
  EXPECT_EQ(s.instructions, 12);
  EXPECT_EQ(s.wave_cycles, 40 + 10 + 8 + 20 + 2);
  EXPECT_EQ(cycles(s, stall_category::vmem_wait), 40);
  // The last row's stall (30) exceeds its latency (20): counted as 20 of stall, reported.
  EXPECT_EQ(cycles(s, stall_category::valu), 2 + 20);
  EXPECT_EQ(s.execute_cycles, 6);
  EXPECT_EQ(s.inconsistent_rows, 1u);
}

TEST(stages_thread_trace, malformed_files_are_named_with_the_problem_and_a_fix) {
  auto error_of = [](auto parse) {
    try {
      parse();
    } catch (const thread_trace_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = error_of(
      [] { parse_stats_csv("CodeObj,Vaddr,Instruction,Hitcount,Latency,Idle\n", "a.csv"); });
  EXPECT_NE(missing.find("a.csv: no \"Stall\" column"), std::string::npos) << missing;
  EXPECT_NE(missing.find("fix:"), std::string::npos);
  const std::string number = error_of([] {
    parse_stats_csv("Instruction,Hitcount,Latency,Stall,Idle\n\"v_nop\",1,abc,0,0\n", "b.csv");
  });
  EXPECT_NE(number.find("b.csv: row 2: Latency \"abc\" is not a whole number"), std::string::npos)
      << number;
  const std::string negative = error_of([] {
    parse_stats_csv("Instruction,Hitcount,Latency,Stall,Idle\n\"v_nop\",1,4,-1,0\n", "c.csv");
  });
  EXPECT_NE(negative.find("Stall \"-1\""), std::string::npos) << negative;
  const std::string fields = error_of(
      [] { parse_stats_csv("Instruction,Hitcount,Latency,Stall,Idle\n\"v_nop\",1,4\n", "d.csv"); });
  EXPECT_NE(fields.find("d.csv: line 2 has 3 fields, the header needs 5"), std::string::npos)
      << fields;
  const std::string quote = error_of([] {
    parse_stats_csv("Instruction,Hitcount,Latency,Stall,Idle\n\"v_nop,1,4,0,0\n", "e.csv");
  });
  EXPECT_NE(quote.find("e.csv: line 2: a quoted field never ends"), std::string::npos) << quote;
  EXPECT_NE(error_of([] { parse_stats_csv("", "f.csv"); }).find("f.csv: empty"), std::string::npos);
  EXPECT_NE(error_of([] { parse_code_json("[1, 2", "g.json"); }).find("g.json: not a JSON object"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_code_json(R"({"code": []})", "h.json");
            }).find("h.json: no \"header\" and \"code\" array"),
            std::string::npos);
  const std::string row = error_of([] {
    parse_code_json(
        R"({"header": "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle",
                        "code": [["v_nop", 0, 1, "", 1, 0, 1, 2.5, 0, 0]]})",
        "i.json");
  });
  EXPECT_NE(row.find("i.json: code row 1: Latency 2.5 is not a whole number"), std::string::npos)
      << row;
}

} // namespace
} // namespace rpl::stages::att
