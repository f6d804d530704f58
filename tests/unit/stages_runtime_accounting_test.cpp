#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/trace/rocpd_writer.hpp"
#include "stages/trace/runtime_accounting.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::rocpd {
namespace {

using rpl::testing::temp_dir;

dispatch_row row(std::string_view name,
                 std::int64_t start,
                 std::int64_t end,
                 std::int64_t agent = 1,
                 std::int64_t queue = 0,
                 std::int64_t stream = 0,
                 std::int64_t pid = 10,
                 std::size_t database = 0) {
  dispatch_row r;
  r.kernel_name = name;
  r.start_ns = start;
  r.end_ns = end;
  r.agent_id = agent;
  r.queue_id = queue;
  r.stream_id = stream;
  r.pid = pid;
  r.database = database;
  return r;
}

TEST(stages_runtime_accounting, golden_statistics_of_five_durations) {
  const kernel_stats s = kernel_statistics("k", {100, 10, 40, 30, 20});
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.total_ns, 200.0);
  EXPECT_DOUBLE_EQ(s.mean_ns, 40.0);
  EXPECT_DOUBLE_EQ(s.median_ns, 30.0);
  EXPECT_DOUBLE_EQ(s.p95_ns, 100.0); // rank ceil(4.75) = 5
  EXPECT_DOUBLE_EQ(s.min_ns, 10.0);
  EXPECT_DOUBLE_EQ(s.max_ns, 100.0);
  // Deviations -30 -20 -10 0 60: squares sum to 5000, / (n - 1) = 1250.
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(1250.0) / 40.0);
  EXPECT_FALSE(s.runtime_helper);
}

TEST(stages_runtime_accounting, p95_is_the_nearest_rank) {
  std::vector<std::int64_t> twenty;
  for (std::int64_t i = 20; i >= 1; --i) {
    twenty.push_back(i * 10);
  }
  const kernel_stats s = kernel_statistics("k", twenty);
  EXPECT_DOUBLE_EQ(s.p95_ns, 190.0);    // rank ceil(19.0) = 19
  EXPECT_DOUBLE_EQ(s.median_ns, 105.0); // mean of the 10th and 11th
  std::vector<std::int64_t> twenty_one = twenty;
  twenty_one.push_back(210);
  EXPECT_DOUBLE_EQ(kernel_statistics("k", twenty_one).p95_ns, 200.0); // rank ceil(19.95) = 20
  EXPECT_DOUBLE_EQ(kernel_statistics("k", {7}).p95_ns, 7.0);
  EXPECT_DOUBLE_EQ(kernel_statistics("k", {7}).cv, 0.0);
}

TEST(stages_runtime_accounting, recognizes_rocclr_helper_kernels) {
  EXPECT_TRUE(is_runtime_helper("__amd_rocclr_fillBufferAligned"));
  EXPECT_TRUE(is_runtime_helper("__amd_rocclr_copyBuffer"));
  EXPECT_TRUE(is_runtime_helper("__amd_rocclr_fillBufferAligned.kd"));
  EXPECT_FALSE(is_runtime_helper("gemm"));
  EXPECT_FALSE(is_runtime_helper("my__amd_rocclr_lookalike"));
  EXPECT_FALSE(runtime_helper_prefixes().empty());
}

TEST(stages_runtime_accounting, splits_user_and_helper_kernels_and_sorts_them) {
  runtime_accumulator acc({}, {}, {});
  acc.add(row("b", 0, 100));
  acc.add(row("a", 100, 200));
  acc.add(row("c", 200, 500));
  acc.add(row("__amd_rocclr_copyBuffer", 500, 550));
  acc.add(row("b", 1000, 1010));
  const runtime_summary s = acc.finish();
  ASSERT_EQ(s.kernels.size(), 3u);
  EXPECT_EQ(s.kernels[0].name, "c");
  EXPECT_EQ(s.kernels[1].name, "b"); // 110
  EXPECT_EQ(s.kernels[2].name, "a"); // 100
  ASSERT_EQ(s.helper_kernels.size(), 1u);
  EXPECT_TRUE(s.helper_kernels[0].runtime_helper);
  EXPECT_DOUBLE_EQ(s.total_gpu_ns, 510.0);
  EXPECT_DOUBLE_EQ(s.helper_gpu_ns, 50.0);
  EXPECT_DOUBLE_EQ(s.wall_span_ns, 1010.0);
  EXPECT_EQ(s.dispatch_count, 5u);
  EXPECT_EQ(s.dominant_kernel, "c");
}

TEST(stages_runtime_accounting, equal_totals_sort_by_name) {
  runtime_accumulator acc({}, {}, {});
  acc.add(row("zeta", 0, 100));
  acc.add(row("alpha", 0, 100));
  const runtime_summary s = acc.finish();
  EXPECT_EQ(s.kernels[0].name, "alpha");
  EXPECT_EQ(s.dominant_kernel, "alpha");
}

TEST(stages_runtime_accounting, labels_agents_queues_streams_and_processes) {
  std::vector<agent_row> agents(2);
  agents[0].id = 1;
  agents[0].name = "gfx90a";
  agents[1].id = 1;
  agents[1].name = "gfx90a";
  agents[1].database = 1;
  std::vector<queue_row> queues{{0, 0, 10, "Default Queue"}, {0, 16, 10, "Queue 1"}};
  std::vector<stream_row> streams{{0, 0, 10, "Default Stream"}};
  runtime_accumulator acc(agents, queues, streams);
  acc.add(row("k", 0, 100, 1, 16, 0, 10, 0));
  acc.add(row("k", 0, 50, 1, 0, 0, 10, 0));
  acc.add(row("k", 0, 30, 1, 0, 0, 20, 1)); // another process on the same GPU
  acc.add(row("k", 0, 5, 3, 0, 7, 10, 0));  // an agent and stream with no info row
  const runtime_summary s = acc.finish();
  ASSERT_EQ(s.per_agent.size(), 2u);
  EXPECT_EQ(s.per_agent[0].name, "gfx90a (agent 1)");
  EXPECT_EQ(s.per_agent[0].count, 3u);
  EXPECT_DOUBLE_EQ(s.per_agent[0].total_ns, 180.0);
  EXPECT_EQ(s.per_agent[1].name, "agent 3");
  ASSERT_EQ(s.per_queue.size(), 3u);
  EXPECT_EQ(s.per_queue[0].name, "Queue 1 (pid 10)");
  EXPECT_EQ(s.per_queue[1].name, "Default Queue (pid 10)");
  EXPECT_DOUBLE_EQ(s.per_queue[1].total_ns, 55.0);
  EXPECT_EQ(s.per_queue[2].name, "queue 0 (pid 20)");
  ASSERT_EQ(s.per_stream.size(), 3u);
  EXPECT_EQ(s.per_stream[0].name, "Default Stream (pid 10)");
  EXPECT_EQ(s.per_stream[2].name, "stream 7 (pid 10)");
  ASSERT_EQ(s.per_process.size(), 2u);
  EXPECT_EQ(s.per_process[0].name, "pid 10");
  EXPECT_EQ(s.per_process[0].count, 3u);
  EXPECT_EQ(s.per_process[1].name, "pid 20");
}

TEST(stages_runtime_accounting, an_empty_trace_summarizes_to_zero) {
  const runtime_summary s = runtime_accumulator({}, {}, {}).finish();
  EXPECT_TRUE(s.kernels.empty());
  EXPECT_EQ(s.dispatch_count, 0u);
  EXPECT_DOUBLE_EQ(s.wall_span_ns, 0.0);
  EXPECT_TRUE(s.dominant_kernel.empty());
}

TEST(stages_runtime_accounting, golden_numbers_from_a_tiny_database) {
  temp_dir dir;
  {
    writer w(dir / "tiny.db");
    rpl::testing::add_process_header(w, 50, 51);
    rocpd::code_object_info co;
    co.id = 1;
    co.agent_id = 1;
    w.add_code_object(co);
    rpl::testing::add_symbol(w, 1, 1, "axpy");
    rpl::testing::add_symbol(w, 2, 1, "__amd_rocclr_fillBufferAligned");
    // axpy: 100, 200, 300, 400, 1000 ns; the helper: 50 ns.
    const std::int64_t durations[] = {100, 200, 300, 400, 1000};
    std::int64_t t = 10'000;
    for (const std::int64_t d : durations) {
      rocpd::dispatch_info info;
      info.kernel_id = 1;
      info.agent_id = 1;
      info.start_ns = t;
      info.end_ns = t + d;
      w.add_dispatch(info);
      t += 2'000;
    }
    rocpd::dispatch_info fill;
    fill.kernel_id = 2;
    fill.agent_id = 2;
    fill.start_ns = 5'000;
    fill.end_ns = 5'050;
    w.add_dispatch(fill);
  }
  const runtime_summary s = summarize(reader::open({dir / "tiny.db"}));
  ASSERT_EQ(s.kernels.size(), 1u);
  const kernel_stats& k = s.kernels[0];
  EXPECT_EQ(k.name, "axpy");
  EXPECT_EQ(k.count, 5u);
  EXPECT_DOUBLE_EQ(k.total_ns, 2000.0);
  EXPECT_DOUBLE_EQ(k.mean_ns, 400.0);
  EXPECT_DOUBLE_EQ(k.median_ns, 300.0);
  EXPECT_DOUBLE_EQ(k.p95_ns, 1000.0);
  EXPECT_DOUBLE_EQ(k.min_ns, 100.0);
  EXPECT_DOUBLE_EQ(k.max_ns, 1000.0);
  // Deviations -300 -200 -100 0 600: squares 500000, / 4 = 125000; sqrt / 400.
  EXPECT_DOUBLE_EQ(k.cv, std::sqrt(125000.0) / 400.0);
  EXPECT_NEAR(k.cv, 0.883883, 1e-6);
  ASSERT_EQ(s.helper_kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(s.helper_gpu_ns, 50.0);
  EXPECT_DOUBLE_EQ(s.total_gpu_ns, 2000.0);
  EXPECT_DOUBLE_EQ(s.wall_span_ns,
                   10'000.0 + 8'000 + 1'000 - 5'000); // first start 5000, last end 19000
  EXPECT_EQ(s.dispatch_count, 6u);
  EXPECT_EQ(s.dominant_kernel, "axpy");
  ASSERT_EQ(s.per_agent.size(), 2u);
  EXPECT_EQ(s.per_agent[0].name, "gfx90a (agent 1)");
  EXPECT_EQ(s.per_agent[1].name, "gfx90a (agent 2)");
  ASSERT_EQ(s.per_queue.size(), 1u);
  EXPECT_EQ(s.per_queue[0].name, "Default Queue (pid 50)");
  EXPECT_EQ(s.per_process[0].name, "pid 50");
}

TEST(stages_runtime_accounting, stability_across_runs) {
  auto run = [](double total) {
    runtime_summary s;
    s.total_gpu_ns = total;
    return s;
  };
  const run_stability stable = across_runs({run(1000), run(1020), run(980)});
  EXPECT_EQ(stable.per_run_total_ns, (std::vector<double>{1000, 1020, 980}));
  EXPECT_DOUBLE_EQ(stable.mean, 1000.0);
  EXPECT_DOUBLE_EQ(stable.median, 1000.0);
  EXPECT_DOUBLE_EQ(stable.stddev, 20.0);
  EXPECT_DOUBLE_EQ(stable.cv, 0.02);
  EXPECT_EQ(stable.stability, stability_class::stable);
  EXPECT_EQ(across_runs({run(1000), run(1080), run(920)}).stability, stability_class::moderate);
  EXPECT_EQ(across_runs({run(1000), run(1500), run(500)}).stability, stability_class::unstable);
  EXPECT_EQ(across_runs({}).per_run_total_ns.size(), 0u);
}

} // namespace
} // namespace rpl::stages::rocpd
