#include <gtest/gtest.h>

#include "stages/analysis/application_analysis.hpp"
#include "support/json_schema.hpp"

namespace rpl::stages::analysis {
namespace {

using nlohmann::json;

kernel_analysis kernel(std::string name,
                       double total_ns,
                       double share,
                       std::optional<double> cp_share,
                       bottleneck_inputs in) {
  kernel_analysis k;
  k.name = std::move(name);
  k.dispatches = 4;
  k.total_ns = total_ns;
  k.share = share;
  k.critical_path_share = cp_share;
  if (cp_share)
    k.critical_path_ns = *cp_share * 10e6;
  k.inputs = in;
  k.bottleneck = classify(in, bottleneck_thresholds{});
  if (!in.compute_pct)
    k.roofline_missing = "no counters";
  else
    k.roofline = {{"bound", "memory"}};
  return k;
}

application_analysis example() {
  bottleneck_inputs spin;
  spin.compute_pct = 20;
  spin.memory_pct = 5;
  spin.occupancy = 0.5;
  spin.waves_per_cu = 2;
  bottleneck_inputs copy;
  copy.compute_pct = 2;
  copy.memory_pct = 88;
  application_analysis a;
  a.notes = {"critical path from recorded synchronization"};
  a.critical_path_ns = 10e6;
  a.makespan_ns = 12e6;
  a.kernels = {kernel("spin", 6e6, 0.6, 0.7, spin), kernel("copy", 3e6, 0.3, 0.2, copy),
               kernel("idle_helper", 1e6, 0.1, 0.0, bottleneck_inputs{})};
  a.kernels[0].what_if = {{10, 0.6e6}};
  a.kernels[0].min_slack_ns = 0;
  return a;
}

TEST(stages_application_analysis, analysis_json_follows_its_schema_and_ranks_the_limits) {
  const json j = to_json(example());
  EXPECT_EQ(rpl::testing::schema_errors(j, "analysis.schema.json"), std::vector<std::string>{});
  // Kernels with no critical-path share are not limits.
  ASSERT_EQ(j["limits"].size(), 2u);
  EXPECT_EQ(j["limits"][0]["kernel"], "spin");
  EXPECT_EQ(j["limits"][0]["class"], "latency_bound");
  EXPECT_EQ(j["limits"][1]["class"], "memory_bandwidth_bound");
  EXPECT_TRUE(j["kernels"][2]["roofline"].is_null());
  EXPECT_EQ(j["kernels"][2]["roofline_missing"], "no counters");
  EXPECT_TRUE(j["kernels"][2]["bottleneck"]["class"].is_null());
  // The schema rejects what it must: a share above 1, an unknown class.
  json bad = j;
  bad["kernels"][0]["gpu_time_share"] = 1.5;
  EXPECT_FALSE(rpl::testing::schema_errors(bad, "analysis.schema.json").empty());
  bad = j;
  bad["limits"][0]["class"] = "slow";
  EXPECT_FALSE(rpl::testing::schema_errors(bad, "analysis.schema.json").empty());
}

TEST(stages_application_analysis, the_text_section_names_the_top_kernels_with_class_and_next_step) {
  const std::string text = limits_text(example());
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "What limits this application (critical path 10.000 ms of 12.000 ms):");
  EXPECT_NE(text.find("  1. spin  70.0 % of the critical path  latency bound: compute 20.0 % and "
                      "memory 5.0 % of peak (both < 60.0 %), with enough waves to fill the GPU\n"
                      "     next: "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  2. copy  20.0 % of the critical path  memory-bandwidth bound"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("idle_helper"), std::string::npos);
  // Without a critical path, the ranking falls back to GPU time and says so.
  application_analysis no_path = example();
  for (auto& k : no_path.kernels)
    k.critical_path_share.reset();
  no_path.critical_path_ns.reset();
  const std::string fallback = limits_text(no_path, 1);
  EXPECT_NE(fallback.find("1. spin  60.0 % of GPU time"), std::string::npos) << fallback;
  EXPECT_EQ(fallback.find("2."), std::string::npos);
  EXPECT_EQ(limits_text(application_analysis{}),
            "What limits this application:\n  nothing: no user kernel ran\n");
}

} // namespace
} // namespace rpl::stages::analysis
