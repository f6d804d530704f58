// The application's roofline as a struct (stages/analysis/roofline_report.hpp), its roofline.json,
// and the HTML page's input built from it (html_report_builder.hpp).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/analysis/html_report_builder.hpp"
#include "stages/analysis/roofline_report.hpp"

namespace rpl::stages::analysis {
namespace {

profile_report two_kernels() {
  profile_report report;
  for (const char* name : {"gemm", "copy"}) {
    kernel_report k;
    k.runtime.name = name;
    report.kernels.push_back(k);
  }
  return report;
}

TEST(roofline_report, says_why_each_kernel_has_no_roofline) {
  const auto without_passes = build_roofline_report(two_kernels(), {}, {});
  ASSERT_EQ(without_passes.kernels.size(), 2u);
  EXPECT_FALSE(without_passes.roofs);
  EXPECT_EQ(without_passes.kernels[0].missing,
            "no counter pass: record one with `rocm-perf profile --counters roofline`");
  roofline_context with_passes;
  with_passes.counter_passes = true;
  const auto unrecorded = build_roofline_report(two_kernels(), {}, with_passes);
  EXPECT_EQ(unrecorded.kernels[1].missing, "the counter passes did not record this kernel");

  const auto doc = to_json(without_passes);
  EXPECT_EQ(doc["schema_version"], "1.0");
  EXPECT_TRUE(doc["peaks"].is_null());
  EXPECT_TRUE(doc["notes"].empty());
  ASSERT_EQ(doc["kernels"].size(), 2u);
  EXPECT_EQ(doc["kernels"][0]["name"], "gemm");
  EXPECT_TRUE(doc["kernels"][0]["roofline"].is_null());
  EXPECT_FALSE(doc["kernels"][0].contains("dispatches"));
  EXPECT_EQ(doc["kernels"][0]["missing"], without_passes.kernels[0].missing);
}

TEST(html_report_builder, places_kernels_with_an_intensity_on_the_roofs) {
  roofline_report roofline;
  roofline.roofs = peaks{};
  roofline.roofs->bytes_per_s = 3.0e12;
  roofline.roofs->flops_per_s = {{"fp32", 6.0e13}};
  roofline_kernel gemm;
  gemm.name = "gemm";
  gemm.roofline = kernel_roofline{};
  gemm.roofline->intensity = 40.0;
  gemm.roofline->flops_per_s = 2.0e13;
  gemm.roofline->bound = "compute";
  gemm.roofline->percent_of_compute_peak = 33.0;
  gemm.roofline->percent_of_memory_peak = 60.0;
  roofline_kernel copy;
  copy.name = "copy";
  copy.missing = "no counter pass";
  roofline.kernels = {gemm, copy};
  application_analysis analysis;
  analysis.notes = {"a note"};
  for (const char* name : {"gemm", "copy"}) {
    kernel_analysis k;
    k.name = name;
    analysis.kernels.push_back(k);
  }

  const auto page = build_html_report_input(two_kernels(), roofline, analysis);
  EXPECT_EQ(page.title, "the traced application");
  EXPECT_EQ(page.notes, analysis.notes);
  ASSERT_TRUE(page.memory_bytes_per_s);
  EXPECT_DOUBLE_EQ(*page.memory_bytes_per_s, 3.0e12);
  ASSERT_EQ(page.compute_roofs.size(), 1u);
  EXPECT_EQ(page.compute_roofs[0].label, "fp32");
  ASSERT_EQ(page.points.size(), 1u);
  EXPECT_EQ(page.points[0].kernel, "gemm");
  EXPECT_DOUBLE_EQ(page.points[0].intensity, 40.0);
  EXPECT_EQ(page.points[0].bound, "compute");
  ASSERT_EQ(page.kernels.size(), 2u);
  ASSERT_TRUE(page.kernels[0].percent_of_peak);
  EXPECT_DOUBLE_EQ(*page.kernels[0].percent_of_peak, 60.0); // the larger of the two
  EXPECT_FALSE(page.kernels[1].percent_of_peak);
  EXPECT_EQ(page.kernels[1].bottleneck, "no class");
}

} // namespace
} // namespace rpl::stages::analysis
