#include <gtest/gtest.h>

#include "stages/analysis/memory_access.hpp"

namespace rpl::stages::analysis {
namespace {

rocpd::kernel_counters access_counters(std::initializer_list<std::pair<const char*, double>> sums,
                                       std::size_t dispatches = 2) {
  rocpd::kernel_counters k;
  k.name = "gather";
  for (const auto& [name, sum] : sums)
    k.counters[name] = {sum, dispatches};
  return k;
}

TEST(stages_memory_access, nvidia_sectors_per_request_count_loads_and_stores_together) {
  // Two dispatches of a row gather: 32 sectors per load request, stores coalesced (4).
  const auto a = memory_access_of(
      access_counters({{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 32000},
                       {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000},
                       {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 4000},
                       {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 1000},
                       {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 170},
                       {"l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 120}}));
  ASSERT_TRUE(a.sectors_per_request);
  EXPECT_DOUBLE_EQ(*a.sectors_per_request, 18);
  EXPECT_DOUBLE_EQ(*a.l2_pct, 85); // a mean over the 2 dispatches
  EXPECT_DOUBLE_EQ(*a.l1_pct, 60);
  EXPECT_FALSE(a.dram_pct);
  EXPECT_FALSE(a.coalescing_pct);
  EXPECT_EQ(to_json(a)["sectors_per_request"], 18);
  // Loads only (a kernel that stores nothing global).
  const auto loads =
      memory_access_of(access_counters({{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 400},
                                        {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 100}}));
  EXPECT_DOUBLE_EQ(loads.sectors_per_request.value_or(0), 4);
}

TEST(stages_memory_access, amd_coalescing_is_rocprof_computes_formula) {
  // The formula's two published cases (a wave of 64 lanes, 2,048 waves): a unit-stride copy and a
  // stride-4 copy.
  const auto coalesced = memory_access_of(
      access_counters({{"TA_TOTAL_WAVEFRONTS_sum", 2048}, {"TCP_TOTAL_ACCESSES_sum", 32768}}));
  EXPECT_DOUBLE_EQ(coalesced.coalescing_pct.value_or(0), 100);
  const auto strided = memory_access_of(
      access_counters({{"TA_TOTAL_WAVEFRONTS", 2048}, {"TCP_TOTAL_ACCESSES", 131072}}));
  EXPECT_DOUBLE_EQ(strided.coalescing_pct.value_or(0), 25);
  EXPECT_TRUE(memory_access_of(access_counters({{"TA_TOTAL_WAVEFRONTS_sum", 2048}})).empty());
  EXPECT_TRUE(memory_access_of(access_counters({{"TA_TOTAL_WAVEFRONTS_sum", 2048},
                                                {"TCP_TOTAL_ACCESSES_sum", 0}}))
                  .empty());
}

} // namespace
} // namespace rpl::stages::analysis
