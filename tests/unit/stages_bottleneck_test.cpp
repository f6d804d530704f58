#include <gtest/gtest.h>

#include "stages/analysis/bottleneck.hpp"

namespace rpl::stages::analysis {
namespace {

using nlohmann::json;

bottleneck_inputs sol(double compute, double memory) {
  bottleneck_inputs in;
  in.compute_pct = compute;
  in.memory_pct = memory;
  in.occupancy = 0.5;
  in.waves_per_cu = 4;
  return in;
}

bottleneck_class class_of(const bottleneck_inputs& in) {
  const auto label = classify(in, bottleneck_thresholds{});
  EXPECT_TRUE(label.label.has_value()) << label.missing;
  return label.label.value_or(bottleneck_class::balanced);
}

TEST(stages_bottleneck, the_embedded_thresholds_are_the_documented_ones) {
  const auto t = bottleneck_thresholds::defaults();
  EXPECT_EQ(t.sol_high_pct, 80);
  EXPECT_EQ(t.sol_low_pct, 60);
  EXPECT_EQ(t.sol_gap_pct, 10);
  EXPECT_EQ(t.min_waves_per_cu, 1);
  EXPECT_EQ(t.under_occupied_max_occupancy, 0.25);
  EXPECT_EQ(t.divergence_min_active_fraction, 0.75);
  EXPECT_EQ(t.launch_idle_share, 0.5);
  EXPECT_EQ(t.stall_share, 0.3);
  EXPECT_EQ(t.uncoalesced_min_sectors_per_request, 16);
  EXPECT_EQ(t.uncoalesced_max_coalescing_pct, 50);
}

TEST(stages_bottleneck, a_row_gather_is_uncoalesced_not_under_occupied) {
  // The issue's H100 case: DRAM half idle, L2 busy, few resident warps; the old rules said
  // under-occupied ("launch more blocks").
  auto in = sol(12, 45);
  in.occupancy = 0.2;
  in.occupancy_limiter = "registers";
  EXPECT_EQ(class_of(in), bottleneck_class::under_occupied);
  in.access.sectors_per_request = 32;
  in.access.l1_pct = 61;
  in.access.l2_pct = 88.7;
  const auto label = classify(in, bottleneck_thresholds{});
  ASSERT_TRUE(label.label);
  EXPECT_EQ(*label.label, bottleneck_class::memory_uncoalesced);
  EXPECT_EQ(label.rule, "memory.uncoalesced");
  EXPECT_EQ(to_id(*label.label), "memory_uncoalesced");
  EXPECT_EQ(to_string(*label.label), "memory: uncoalesced");
  EXPECT_NE(label.because.find("32.0 sectors of 32 B per global request (> 16.0"),
            std::string::npos)
      << label.because;
  EXPECT_NE(label.because.find("L1 61.0 %, L2 88.7 %, DRAM 45.0 %"), std::string::npos)
      << label.because;
  EXPECT_NE(label.next_step.find("access order"), std::string::npos);
  EXPECT_EQ(label.next_step.find("launch more blocks"), std::string::npos);
  EXPECT_EQ(label.measured["sectors_per_request"], 32);
  // 16 sectors per request is a warp of coalesced 16-byte loads: not flagged.
  in.access.sectors_per_request = 16;
  EXPECT_NE(classify(in, bottleneck_thresholds{}).rule, "memory.uncoalesced");
}

TEST(stages_bottleneck, amd_coalescing_under_half_is_uncoalesced) {
  auto in = sol(5, 30);
  in.access.coalescing_pct = 25; // rocprof-compute's 16.1 Coalescing of a stride-4 access
  EXPECT_EQ(class_of(in), bottleneck_class::memory_uncoalesced);
  EXPECT_NE(classify(in, bottleneck_thresholds{}).because.find("vL1D coalescing 25.0 % (< 50.0"),
            std::string::npos);
  in.access.coalescing_pct = 100;
  EXPECT_EQ(class_of(in), bottleneck_class::latency_bound);
  // Without a roofline the access pattern is still a class.
  bottleneck_inputs bare;
  bare.access.coalescing_pct = 12.5;
  EXPECT_EQ(class_of(bare), bottleneck_class::memory_uncoalesced);
}

TEST(stages_bottleneck, compute_at_its_peak_wins_over_an_uncoalesced_side_load) {
  auto in = sol(92, 20);
  in.access.sectors_per_request = 24;
  in.access.l2_pct = 30;
  EXPECT_EQ(class_of(in), bottleneck_class::compute_throughput_bound);
}

TEST(stages_bottleneck, a_busy_cache_level_with_a_quiet_dram_is_memory_bound_not_occupancy) {
  auto in = sol(20, 25);
  in.waves_per_cu = 0.5; // would be "launch more blocks"
  in.access.l2_pct = 86;
  in.access.l1_pct = 40;
  in.access.sectors_per_request = 4; // coalesced
  const auto label = classify(in, bottleneck_thresholds{});
  ASSERT_TRUE(label.label);
  EXPECT_EQ(*label.label, bottleneck_class::memory_bandwidth_bound);
  EXPECT_EQ(label.rule, "sol.both_low.cache_level");
  EXPECT_NE(label.because.find("L2 at 86.0 % of its peak"), std::string::npos) << label.because;
  in.access.l2_pct = 50; // no level busy: the occupancy rule as before
  EXPECT_EQ(class_of(in), bottleneck_class::under_occupied);
}

TEST(stages_bottleneck, a_latency_bound_kernel_names_its_dominant_stall_when_counted) {
  auto in = sol(20, 30);
  in.issue_active = 0.21;
  in.top_stall = "long_scoreboard";
  in.top_stall_share = 0.45; // > 0.3: reported (CPIStall)
  const auto label = classify(in, bottleneck_thresholds{});
  ASSERT_TRUE(label.label);
  EXPECT_EQ(*label.label, bottleneck_class::latency_bound);
  EXPECT_EQ(label.rule, "sol.both_low.latency.stall");
  EXPECT_NE(label.because.find("the dominant warp stall is long_scoreboard (45.0 % of the latency "
                               "per instruction, an instruction issued in 21.0 % of cycles)"),
            std::string::npos)
      << label.because;
  EXPECT_NE(label.next_step.find("global or local memory"), std::string::npos);
  in.top_stall_share = 0.3; // not above 0.3: not named
  EXPECT_EQ(classify(in, bottleneck_thresholds{}).rule, "sol.both_low.latency");
}

TEST(stages_bottleneck, a_unit_at_80_percent_of_peak_is_its_bound) {
  // A copy kernel: memory 85 %, compute 3 %: rule 3, memory side.
  const auto copy = classify(sol(3, 85), bottleneck_thresholds{});
  ASSERT_TRUE(copy.label);
  EXPECT_EQ(*copy.label, bottleneck_class::memory_bandwidth_bound);
  EXPECT_EQ(copy.rule, "sol.high.memory");
  EXPECT_EQ(copy.thresholds, json({{"sol_high_pct", 80.0}}));
  EXPECT_EQ(copy.measured.at("memory_pct"), 85.0);
  EXPECT_NE(copy.because.find("compute 3.0 % and memory 85.0 % of peak (one >= 80.0 %)"),
            std::string::npos)
      << copy.because;
  // A GEMM: compute 80 % exactly (>= is inclusive), memory 40 %.
  EXPECT_EQ(class_of(sol(80, 40)), bottleneck_class::compute_throughput_bound);
  // Both at or over 80: the larger wins; a tie goes to compute.
  EXPECT_EQ(class_of(sol(85, 90)), bottleneck_class::memory_bandwidth_bound);
  EXPECT_EQ(class_of(sol(90, 90)), bottleneck_class::compute_throughput_bound);
}

TEST(stages_bottleneck, both_under_60_percent_is_latency_unless_the_gpu_is_not_filled) {
  EXPECT_EQ(class_of(sol(30, 59.9)), bottleneck_class::latency_bound);
  auto small_grid = sol(30, 40);
  small_grid.waves_per_cu = 0.5; // < 1 wave
  const auto label = classify(small_grid, bottleneck_thresholds{});
  ASSERT_TRUE(label.label);
  EXPECT_EQ(*label.label, bottleneck_class::under_occupied);
  EXPECT_EQ(label.rule, "sol.both_low.occupancy");
  EXPECT_NE(label.because.find("0.50 waves of blocks per CU/SM (< 1.00)"), std::string::npos)
      << label.because;
  auto low_occupancy = sol(30, 40);
  low_occupancy.occupancy = 0.25; // 2 of 8 waves: <= 25 % is inclusive
  low_occupancy.occupancy_limiter = "registers";
  const auto low = classify(low_occupancy, bottleneck_thresholds{});
  ASSERT_TRUE(low.label);
  EXPECT_EQ(*low.label, bottleneck_class::under_occupied);
  EXPECT_NE(low.because.find("theoretical occupancy 25.0 % (<= 25.0 %, limited by registers)"),
            std::string::npos)
      << low.because;
  EXPECT_NE(low.next_step.find("less registers use per block"), std::string::npos);
  auto just_enough = sol(30, 40);
  just_enough.occupancy = 0.2501;
  EXPECT_EQ(class_of(just_enough), bottleneck_class::latency_bound);
}

TEST(stages_bottleneck, divergence_turns_a_compute_or_latency_class_into_divergence_limited) {
  auto divergent = sol(85, 20);
  divergent.active_thread_fraction = 0.5; // 16 of 32 lanes
  const auto label = classify(divergent, bottleneck_thresholds{});
  ASSERT_TRUE(label.label);
  EXPECT_EQ(*label.label, bottleneck_class::divergence_limited);
  EXPECT_EQ(label.rule, "sol.high.compute.divergent");
  EXPECT_NE(label.because.find("50.0 % of a wave's lanes active per instruction (< 75.0 %)"),
            std::string::npos)
      << label.because;
  auto latency = sol(20, 20);
  latency.active_thread_fraction = 0.74;
  EXPECT_EQ(class_of(latency), bottleneck_class::divergence_limited);
  // 24 of 32 lanes (0.75) is not divergent: the rule is "< 24".
  auto uniform = sol(85, 20);
  uniform.active_thread_fraction = 0.75;
  EXPECT_EQ(class_of(uniform), bottleneck_class::compute_throughput_bound);
  // A memory-bound kernel stays memory-bound however divergent it is.
  auto memory = sol(10, 90);
  memory.active_thread_fraction = 0.3;
  EXPECT_EQ(class_of(memory), bottleneck_class::memory_bandwidth_bound);
}

TEST(stages_bottleneck, between_60_and_80_a_10_point_lead_decides_else_balanced) {
  // compute 75, memory 64: 11 points apart -> compute.
  const auto lead = classify(sol(75, 64), bottleneck_thresholds{});
  ASSERT_TRUE(lead.label);
  EXPECT_EQ(*lead.label, bottleneck_class::compute_throughput_bound);
  EXPECT_EQ(lead.rule, "sol.gap.compute");
  EXPECT_EQ(class_of(sol(50, 70)), bottleneck_class::memory_bandwidth_bound); // 20 apart
  EXPECT_EQ(class_of(sol(70, 61)), bottleneck_class::balanced);               // 9 apart
  EXPECT_EQ(class_of(sol(65, 75)), bottleneck_class::memory_bandwidth_bound); // 10: inclusive
}

TEST(stages_bottleneck, a_stream_idle_half_the_time_is_launch_overhead_bound_first) {
  auto tiny = sol(90, 5); // would be compute bound
  tiny.mean_idle_before_ns = 3000;
  tiny.mean_duration_ns = 3000; // idle share 3000 / 6000 = 0.5 >= 0.5
  const auto label = classify(tiny, bottleneck_thresholds{});
  ASSERT_TRUE(label.label);
  EXPECT_EQ(*label.label, bottleneck_class::launch_overhead_bound);
  EXPECT_EQ(label.rule, "launch.idle_share");
  EXPECT_NE(label.because.find("idle 50.0 % of the time between its dispatches (mean idle 3.00 "
                               "us before a 3.00 us dispatch; >= 50.0 %)"),
            std::string::npos)
      << label.because;
  tiny.mean_idle_before_ns = 2999; // 2999 / 5999 = 0.49992 < 0.5
  EXPECT_EQ(class_of(tiny), bottleneck_class::compute_throughput_bound);
}

TEST(stages_bottleneck, without_a_roofline_only_occupancy_can_be_judged_and_the_gap_is_named) {
  bottleneck_inputs in;
  in.occupancy = 0.125;
  in.waves_per_cu = 3;
  const auto low = classify(in, bottleneck_thresholds{});
  ASSERT_TRUE(low.label);
  EXPECT_EQ(*low.label, bottleneck_class::under_occupied);
  EXPECT_EQ(low.rule, "occupancy.without_roofline");
  in.occupancy = 0.5;
  const auto none = classify(in, bottleneck_thresholds{});
  EXPECT_FALSE(none.label);
  EXPECT_EQ(none.missing, "no roofline (compute and memory throughput unknown): record counters "
                          "with `rocm-perf profile --counters roofline`");
  in.memory_pct = 50;
  EXPECT_NE(classify(in, bottleneck_thresholds{}).missing.find("(compute throughput unknown)"),
            std::string::npos);
  const json j = to_json(none);
  EXPECT_TRUE(j.at("class").is_null());
  EXPECT_EQ(j.at("measured").at("occupancy"), 0.5);
}

TEST(stages_bottleneck, the_same_inputs_always_give_the_same_label_and_json) {
  auto in = sol(72, 33);
  in.active_thread_fraction = 0.9;
  const json first = to_json(classify(in, bottleneck_thresholds::defaults()));
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(to_json(classify(in, bottleneck_thresholds::defaults())), first);
  }
  EXPECT_EQ(first.at("class"), "compute_throughput_bound");
  EXPECT_EQ(first.at("name"), "compute-throughput bound");
  EXPECT_FALSE(first.at("next_step").get<std::string>().empty());
}

TEST(stages_bottleneck, thresholds_from_a_file_override_the_coalescing_limits) {
  const auto t = bottleneck_thresholds::from_json(
      json{{"values", {{"uncoalesced_min_sectors_per_request", {{"value", 8}}}}}});
  EXPECT_EQ(t.uncoalesced_min_sectors_per_request, 8);
  EXPECT_EQ(t.uncoalesced_max_coalescing_pct, 50);
  auto in = sol(10, 20);
  in.access.sectors_per_request = 9;
  EXPECT_EQ(classify(in, t).rule, "memory.uncoalesced");
}

TEST(stages_bottleneck, thresholds_from_a_file_override_only_what_they_name) {
  const json config = {{"values", {{"sol_high_pct", {{"value", 70}, {"source", "test"}}}}}};
  const auto t = bottleneck_thresholds::from_json(config);
  EXPECT_EQ(t.sol_high_pct, 70);
  EXPECT_EQ(t.sol_low_pct, 60);
  EXPECT_EQ(classify(sol(72, 10), t).rule, "sol.high.compute");
  EXPECT_THROW(bottleneck_thresholds::from_json(json{{"values", {{"sol_low_pct", "x"}}}}),
               std::runtime_error);
  EXPECT_THROW(bottleneck_thresholds::from_json(json::array()), std::runtime_error);
}

} // namespace
} // namespace rpl::stages::analysis

namespace rpl::stages::analysis {
namespace {

TEST(stages_bottleneck_thread_trace, an_amd_stall_names_its_source_and_advice) {
  const auto t = bottleneck_thresholds::defaults();
  bottleneck_inputs in;
  in.compute_pct = 10;
  in.memory_pct = 20;
  in.waves_per_cu = 8;
  in.occupancy = 0.8;
  in.top_stall = "lds_smem_wait";
  in.top_stall_share = 0.5;
  in.stall_source = "thread trace";
  const auto label = classify(in, t);
  ASSERT_TRUE(label.label.has_value());
  EXPECT_EQ(*label.label, bottleneck_class::latency_bound);
  EXPECT_EQ(label.rule, "sol.both_low.latency.stall");
  EXPECT_NE(label.because.find("the thread trace's dominant stall is lds_smem_wait (50.0 % of "
                               "the traced waves' cycles)"),
            std::string::npos)
      << label.because;
  EXPECT_NE(label.next_step.find("bank conflicts"), std::string::npos) << label.next_step;
  EXPECT_EQ(label.measured["stall_source"], "thread trace");
  // At or under the threshold (0.3) the stall is not named.
  in.top_stall_share = 0.3;
  EXPECT_EQ(classify(in, t).rule, "sol.both_low.latency");
  // Without a roofline: no class; the stall is evidence in the reason.
  in.top_stall_share = 0.5;
  in.compute_pct.reset();
  in.memory_pct.reset();
  const auto none = classify(in, t);
  EXPECT_FALSE(none.label.has_value());
  EXPECT_NE(none.missing.find("no roofline"), std::string::npos);
  EXPECT_NE(none.missing.find("dominant stall is lds_smem_wait"), std::string::npos)
      << none.missing;
}

} // namespace
} // namespace rpl::stages::analysis
