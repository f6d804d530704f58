// How a replay times its launches, without a GPU (workers/replay/replay_timing.hpp and the
// "timing" object of replay_report.hpp): CUPTI kernel records matched to the launches by
// correlation id (warm-ups, other kernels, missing and unidentified launches), the method names,
// the JSON, and the sentences `rocm-perf replay` and `analyze --replay` print about each side.
#include <gtest/gtest.h>

#include "workers/replay/replay_report.hpp"
#include "workers/replay/replay_timing.hpp"

namespace rpl::workers::replay {
namespace {

TEST(replay_timing, timed_launches_take_their_records_span_in_launch_order) {
  // Records arrive in any order, with warm-ups and a kernel this replay did not launch.
  const std::vector<kernel_span> records = {{12, 5000, 5610}, {10, 1000, 1600}, {7, 0, 900},
                                            {8, 100, 700},    {99, 10, 20},     {11, 3000, 3620}};
  const auto match = match_launches(records, {7, 8}, {10, 11, 12});
  ASSERT_TRUE(match.complete());
  EXPECT_EQ(match.samples_ns, (std::vector<std::int64_t>{600, 620, 610}));
  EXPECT_EQ(match.timed_records, 3u);
  EXPECT_EQ(match.warmup_records, 2u);
  EXPECT_EQ(match.other_records, 1u);
}

TEST(replay_timing, a_timed_launch_without_its_record_is_missing_and_named) {
  const auto match = match_launches({{10, 1000, 1600}, {3, 0, 10}}, {3}, {10, 11, 12});
  EXPECT_FALSE(match.complete());
  EXPECT_EQ(match.missing, 2u);
  EXPECT_EQ(match.samples_ns, (std::vector<std::int64_t>{600}));
  EXPECT_EQ(describe_missing(match, 3, 1, 0),
            "CUPTI delivered no kernel record for 2 of the 3 timed launches (1 timed, 1 warm-up "
            "and 0 other records; 1 incomplete, 0 dropped)");
}

TEST(replay_timing, launches_without_a_correlation_id_are_never_sampled) {
  // The launch callback never ran: every launch reads the same id (0, or the last one seen).
  const auto zero = match_launches({{0, 10, 20}}, {0}, {0, 0});
  EXPECT_FALSE(zero.complete());
  EXPECT_EQ(zero.unidentified, 2u);
  EXPECT_TRUE(zero.samples_ns.empty());
  const auto repeated = match_launches({{5, 10, 20}}, {}, {5, 5, 5});
  EXPECT_EQ(repeated.unidentified, 3u);
  EXPECT_TRUE(repeated.samples_ns.empty());
  EXPECT_EQ(describe_missing(repeated, 3, 0, 0)
                .rfind("CUPTI gave no correlation id to 3 of the 3 "
                       "timed launches",
                       0),
            0u);
}

TEST(replay_timing, a_second_record_of_one_launch_is_not_a_second_sample) {
  const auto match = match_launches({{4, 0, 100}, {4, 200, 250}}, {}, {4});
  ASSERT_TRUE(match.complete());
  EXPECT_EQ(match.samples_ns, (std::vector<std::int64_t>{100}));
  EXPECT_EQ(match.other_records, 1u);
}

TEST(replay_timing, method_names_and_flags_round_trip) {
  for (const auto m : {timing_method::cupti_kernel_activity, timing_method::events_per_launch,
                       timing_method::events_per_batch, timing_method::hsa_dispatch_timestamps}) {
    EXPECT_EQ(timing_method_named(to_string(m)), m);
  }
  EXPECT_EQ(parse_timing_flag("cupti"), timing_method::cupti_kernel_activity);
  EXPECT_EQ(parse_timing_flag("events"), timing_method::events_per_launch);
  EXPECT_EQ(parse_timing_flag("batch"), timing_method::events_per_batch);
  EXPECT_EQ(parse_timing_flag("hsa"), std::nullopt); // the HSA replay's own, not a choice
  EXPECT_EQ(parse_timing_flag("Events"), std::nullopt);
  EXPECT_EQ(to_string(timing_method::cupti_kernel_activity), "cupti_kernel_activity");
  EXPECT_EQ(timing_flag(timing_method::events_per_batch), "batch");
}

TEST(replay_timing, the_json_says_the_method_and_a_fallback_with_its_reason) {
  replay_arguments args;
  args.iterations = 3;
  args.warmup = 1;
  timing_details cupti;
  cupti.records = timing_details::record_counts{3, 1, 0, 0, 0};
  auto doc = timing_json({600, 620, 610}, args, 2, cupti);
  EXPECT_EQ(doc["method"], "cupti_kernel_activity");
  EXPECT_FALSE(doc.contains("requested"));
  EXPECT_FALSE(doc.contains("batch_size"));
  EXPECT_EQ(doc["cupti_records"]["timed"], 3);
  EXPECT_EQ(doc["cupti_records"]["warmup"], 1);
  EXPECT_EQ(doc["median_ns"], 610.0);
  EXPECT_EQ(doc["restored_regions"], 2);
  EXPECT_EQ(doc["samples_ns"].size(), 3u);

  timing_details fallback;
  fallback.method = timing_method::events_per_launch;
  fallback.requested = timing_method::cupti_kernel_activity;
  fallback.fallback_reason = "CUPTI could not be loaded (libcupti.so.13: cannot open)";
  doc = timing_json({700, 720, 710}, args, 2, fallback);
  EXPECT_EQ(doc["method"], "events_per_launch");
  EXPECT_EQ(doc["requested"], "cupti_kernel_activity");
  EXPECT_EQ(doc["fallback_reason"], fallback.fallback_reason);
  EXPECT_FALSE(doc.contains("cupti_records"));

  timing_details batch;
  batch.method = timing_method::events_per_batch;
  batch.batch_size = 10;
  doc = timing_json({500}, args, 0, batch);
  EXPECT_EQ(doc["method"], "events_per_batch");
  EXPECT_EQ(doc["batch_size"], 10);
}

TEST(replay_timing, the_replay_side_is_described_by_its_method) {
  nlohmann::json t = {
      {"method", "cupti_kernel_activity"}, {"iterations", 50}, {"restored_regions", 4}};
  EXPECT_EQ(describe_replay_timing(t),
            "CUPTI kernel activity records of 50 launches (GPU start/end, as the tracer reads "
            "them); 4 written regions restored before each launch, outside what is timed");
  t = {{"method", "events_per_launch"}, {"iterations", 1}, {"restored_regions", 0}};
  EXPECT_EQ(describe_replay_timing(t),
            "a CUDA event pair around each of 1 launch (the events add a few microseconds that a "
            "trace does not); nothing to restore (the kernel writes no captured region)");
  t = {{"method", "events_per_batch"},
       {"iterations", 20},
       {"batch_size", 10},
       {"restored_regions", 0}};
  EXPECT_EQ(describe_replay_timing(t),
            "CUDA events around 20 batches of 10 back-to-back launches, each sample a batch's time "
            "/ 10 (the gaps between launches included); nothing restored (a second launch "
            "without restoring wrote the same output)");
  t = {{"method", "events_per_launch"},
       {"requested", "cupti_kernel_activity"},
       {"fallback_reason", "another CUPTI client holds this process"},
       {"iterations", 20},
       {"restored_regions", 1}};
  EXPECT_EQ(describe_replay_timing(t),
            "a CUDA event pair around each of 20 launches (the events add a few microseconds that "
            "a trace does not); 1 written region restored before each launch, outside what is "
            "timed; --timing cupti was asked for but another CUPTI client holds this process");
  // A replay program from before the methods timed with an event pair per launch.
  t = {{"iterations", 20}, {"restored_regions", 0}};
  EXPECT_NE(describe_replay_timing(t).find("a CUDA event pair around each of 20 launches (a "
                                           "replay program older than the timing methods)"),
            std::string::npos);
  EXPECT_EQ(describe_replay_timing(nullptr), "not timed");
}

TEST(replay_timing, the_application_side_is_named_by_the_traces_agents) {
  EXPECT_EQ(describe_trace_timing(30, {"sm_90"}),
            "GPU start/end of 30 dispatches from the trace (CUPTI kernel activity records)");
  EXPECT_EQ(describe_trace_timing(1, {"gfx942", "gfx942"}),
            "GPU start/end of 1 dispatch from the trace (rocprofv3 kernel dispatch records)");
  EXPECT_EQ(describe_trace_timing(8, {"sm_90", "gfx90a"}),
            "GPU start/end of 8 dispatches from the trace (its kernel dispatch records)");
  EXPECT_EQ(describe_trace_timing(8, {}),
            "GPU start/end of 8 dispatches from the trace (its kernel dispatch records)");
}

} // namespace
} // namespace rpl::workers::replay
