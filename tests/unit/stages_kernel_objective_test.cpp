// stages/trace/kernel_objective.hpp: which dispatches of a traced run count (regex, runtime
// helpers, per-process warm-up dispatches) and how they become samples (every duration for one
// kernel, the sum of per-name medians for several), and the reason when nothing is left.

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/trace/kernel_objective.hpp"
#include "stages/trace/runtime_accounting.hpp"

namespace rpl::stages::rocpd {
namespace {

using samples = std::vector<std::int64_t>;

TEST(stages_kernel_objective, runtime_helpers_are_recognised_in_one_place) {
  EXPECT_TRUE(is_runtime_helper("__amd_rocclr_fillBufferAligned"));
  EXPECT_TRUE(is_runtime_helper("__amd_rocclr_copyBuffer"));
  EXPECT_TRUE(is_runtime_helper("__amd_rocclr_copyBufferRect"));
  EXPECT_FALSE(is_runtime_helper("sgemm_tiled(float const*, float const*, float*, int, int, int)"));
  const kernel_selector every("");
  EXPECT_FALSE(every.selects("__amd_rocclr_fillBuffer"));
  EXPECT_TRUE(every.selects("fill"));
  // A regex that names a helper still does not select it: helpers never count.
  EXPECT_FALSE(kernel_selector("rocclr").selects("__amd_rocclr_copyBuffer"));
}

TEST(stages_kernel_objective, the_regex_is_searched_anywhere_in_the_name) {
  const kernel_selector gemm("gemm");
  EXPECT_TRUE(gemm.selects("sgemm_tiled(float const*, float const*, float*, int, int, int)"));
  EXPECT_TRUE(gemm.selects("void gemm<128>(float*)"));
  EXPECT_FALSE(gemm.selects("reduce_sum(float*, int)"));
  const kernel_selector anchored("^gemm_");
  EXPECT_TRUE(anchored.selects("gemm_tile"));
  EXPECT_FALSE(anchored.selects("sgemm_tile"));
  EXPECT_EQ(gemm.describe(), "--kernel 'gemm'");
  EXPECT_EQ(kernel_selector("").describe(), "--kernel (every user kernel)");
}

TEST(stages_kernel_objective, a_bad_regex_is_a_configuration_error_naming_it) {
  try {
    kernel_selector bad("gemm(");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("--kernel 'gemm(' is not an ECMAScript regular expression (", 0), 0u)
        << what;
    EXPECT_NE(what.find("; fix: escape"), std::string::npos) << what;
  }
}

TEST(stages_kernel_objective, one_kernel_gives_every_duration_after_the_warmup_dispatches) {
  const kernel_selector selector("gemm", 1);
  dispatch_collector collector(selector);
  collector.add("gemm", 7, 100, 110);
  collector.add("gemm", 7, 200, 220);
  collector.add("fill", 7, 300, 301);
  collector.add("gemm", 7, 400, 430);
  const run_selection run = collector.finish();
  ASSERT_EQ(run.kernels.size(), 1u);
  EXPECT_EQ(run.kernels[0].warmup_dropped, 1u);
  EXPECT_EQ(kernel_objective_samples(run), (samples{20, 30}));
  EXPECT_EQ(run.dispatch_count, 4u);
  ASSERT_EQ(run.seen.size(), 2u);
  EXPECT_EQ(run.seen[0].name, "fill");
  EXPECT_FALSE(run.seen[0].selected);
  EXPECT_EQ(run.seen[1].dispatches, 3u);
}

TEST(stages_kernel_objective, warmup_is_per_process_and_per_name_in_start_order) {
  const kernel_selector selector("", 2);
  dispatch_collector collector(selector);
  // Rows arrive out of order; the first two by start time of each process are warm-up.
  collector.add("k", 2, 300, 303);
  collector.add("k", 1, 100, 101);
  collector.add("k", 2, 100, 101);
  collector.add("k", 1, 300, 304);
  collector.add("k", 1, 200, 202);
  collector.add("k", 2, 200, 202);
  collector.add("k", 1, 400, 405);
  const run_selection run = collector.finish();
  ASSERT_EQ(run.kernels.size(), 1u);
  EXPECT_EQ(run.kernels[0].warmup_dropped, 4u);
  EXPECT_EQ(kernel_objective_samples(run), (samples{4, 5, 3})); // pid 1, then pid 2
}

TEST(stages_kernel_objective, several_kernels_give_the_sum_of_their_medians) {
  const kernel_selector selector("", 0);
  dispatch_collector collector(selector);
  for (const std::int64_t d : {10, 30, 20}) {
    collector.add("a", 1, d * 100, d * 100 + d); // median 20
  }
  for (const std::int64_t d : {5, 8}) {
    collector.add("b", 1, 10000 + d, 10000 + 2 * d); // median 6.5 -> 7
  }
  collector.add("__amd_rocclr_fillBuffer", 1, 0, 1000000); // never counts
  EXPECT_EQ(kernel_objective_samples(collector.finish()), (samples{27}));
}

TEST(stages_kernel_objective, a_kernel_seen_only_in_warmup_leaves_the_objective) {
  // gemm.cu: the reference kernel runs once, the tuned one once plus --reps times.
  const kernel_selector selector("gemm", 1);
  dispatch_collector collector(selector);
  collector.add("sgemm_reference", 1, 0, 900);
  for (std::int64_t i = 0; i < 4; ++i) {
    collector.add("sgemm_tiled", 1, 1000 + i * 100, 1000 + i * 100 + 10 + i);
  }
  EXPECT_EQ(kernel_objective_samples(collector.finish()), (samples{11, 12, 13}));
}

TEST(stages_kernel_objective, median_rounds_half_up_and_is_zero_for_none) {
  EXPECT_EQ(median_ns({}), 0);
  EXPECT_EQ(median_ns({5}), 5);
  EXPECT_EQ(median_ns({9, 1, 5}), 5);
  EXPECT_EQ(median_ns({1, 2}), 2);
  EXPECT_EQ(median_ns({4, 1, 3, 2}), 3);
  EXPECT_EQ(median_ns({10, 20}), 15);
}

TEST(stages_kernel_objective, no_match_names_the_regex_and_the_kernels_seen) {
  const kernel_selector selector("sgemm", 1);
  dispatch_collector collector(selector);
  collector.add("naive_gemm", 1, 0, 10);
  collector.add("fill", 1, 20, 30);
  collector.add("__amd_rocclr_fillBuffer", 1, 40, 50);
  const run_selection run = collector.finish();
  EXPECT_TRUE(kernel_objective_samples(run).empty());
  EXPECT_EQ(describe_empty_selection(selector, run),
            "--kernel 'sgemm': no dispatch matched; kernels seen: fill, naive_gemm, "
            "__amd_rocclr_fillBuffer (runtime helper); fix: pass a --kernel regular expression "
            "(ECMAScript, found anywhere in the name) that matches one of them");
}

TEST(stages_kernel_objective, no_match_lists_at_most_ten_names) {
  const kernel_selector selector("nothing");
  dispatch_collector collector(selector);
  for (int i = 0; i < 12; ++i) {
    collector.add("k" + std::to_string(i + 10), 1, 0, 1);
  }
  const std::string reason = describe_empty_selection(selector, collector.finish());
  EXPECT_NE(reason.find("k19 and 2 more; fix:"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("k20"), std::string::npos) << reason;
}

TEST(stages_kernel_objective, an_empty_trace_or_helpers_only_asks_for_gpu_kernels) {
  const kernel_selector selector("");
  EXPECT_EQ(describe_empty_selection(selector, dispatch_collector(selector).finish()),
            "--kernel (every user kernel): no dispatch matched; kernels seen: none; fix: check "
            "that the application launches its kernels on the GPU (runtime helpers never count)");
}

TEST(stages_kernel_objective, warmup_only_matches_say_so) {
  const kernel_selector selector("gemm", 3);
  dispatch_collector collector(selector);
  collector.add("gemm", 1, 0, 10);
  collector.add("gemm", 1, 20, 30);
  const run_selection run = collector.finish();
  EXPECT_TRUE(kernel_objective_samples(run).empty());
  EXPECT_EQ(describe_empty_selection(selector, run),
            "--kernel 'gemm': every matched dispatch was a warm-up dispatch (--warmup-dispatches 3 "
            "per process and kernel; dispatched: gemm 2); fix: lower --warmup-dispatches, or make "
            "the application launch the kernel more often");
}

} // namespace
} // namespace rpl::stages::rocpd
