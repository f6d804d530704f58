// Nsight Compute's raw CSV, read from a real capture (tests/fixtures/ncu/README.md says how it was
// made), and the counter pass it becomes as a rocpd database.
#include <gtest/gtest.h>

#include "stages/trace/ncu_csv.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::ncu {
namespace {

using rpl::testing::temp_dir;

const std::filesystem::path fixture =
    rpl::testing::source_dir / "tests/fixtures/ncu/gemm_1024_h200_raw.csv";

TEST(stages_ncu_csv, reads_the_real_capture_past_the_applications_output) {
  const report r = parse_raw_csv(rpl::testing::read_text(fixture));
  EXPECT_EQ(r.columns.size(), 310u);
  ASSERT_EQ(r.kernels.size(), 4u);
  const kernel_row& reference = r.kernels[0];
  EXPECT_EQ(reference.id, 0);
  EXPECT_EQ(reference.pid, 716);
  EXPECT_EQ(reference.process_name, "gemm");
  EXPECT_EQ(reference.kernel_name, "sgemm_reference(const float *, const float *, float *, int, "
                                   "int, int)");
  EXPECT_EQ(reference.block[0], 16u);
  EXPECT_EQ(reference.block[1], 16u);
  EXPECT_EQ(reference.grid[0], 64u);
  EXPECT_EQ(reference.compute_capability, "9.0");
  const kernel_row& tiled = r.kernels[1];
  EXPECT_EQ(tiled.kernel_name, "sgemm_tiled(const float *, const float *, float *, int, int, int)");
  EXPECT_EQ(tiled.stream, 7);
  EXPECT_EQ(tiled.block[0], 256u);
  EXPECT_EQ(tiled.grid[1], 16u);
  // "1,073,741,824": 1024^3 FFMAs of a 1024^3 SGEMM, thousands separators removed.
  EXPECT_EQ(tiled.metrics.at("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"), 1073741824.0);
  EXPECT_EQ(tiled.metrics.at("gpu__time_duration.sum"), 160384.0);
  EXPECT_EQ(tiled.metrics.at("dram__bytes_read.sum"), 8404736.0);
  EXPECT_DOUBLE_EQ(tiled.metrics.at("launch__waves_per_multiprocessor"), 0.39);
  EXPECT_EQ(r.units.at("dram__bytes_read.sum"), "byte");
  EXPECT_EQ(r.units.at("gpu__time_duration.sum"), "ns");
  // Text columns are not metrics.
  EXPECT_FALSE(tiled.metrics.count("launch__func_cache_config"));
  EXPECT_FALSE(tiled.metrics.count("Kernel Name"));
  EXPECT_EQ(agent_name(tiled.compute_capability), "sm_90");
}

TEST(stages_ncu_csv, names_what_is_wrong_with_text_that_is_not_ncus_raw_page) {
  EXPECT_THROW(parse_raw_csv("==PROF== Connected\nhello\n"), ncu_error);
  try {
    parse_raw_csv("\"ID\",\"Kernel Name\",\"a__b\"\n\"\",\"\",\"ns\"\n\"0\",\"k\"\n");
    FAIL() << "a short row was accepted";
  } catch (const ncu_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3 has 2 fields, the header 3"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_raw_csv("\"ID\",\"Kernel Name\"\n\"0\",\"k\n"), ncu_error);
  EXPECT_THROW(parse_raw_csv("\"ID\",\"Name\"\n"), ncu_error); // no Kernel Name column
  // Quotes inside quotes, and a message line after the table, are fine.
  const report r = parse_raw_csv("\"ID\",\"Kernel Name\",\"x__y.sum\"\n\"\",\"\",\"inst\"\n"
                                 "\"0\",\"k<\"\"q\"\">\",\"1,5\"\n==PROF== Disconnected\n");
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].kernel_name, "k<\"q\">");
  EXPECT_EQ(r.kernels[0].metrics.at("x__y.sum"), 15.0);
}

TEST(stages_ncu_csv, automatic_units_are_scaled_to_bytes_and_nanoseconds) {
  // ncu --import without --print-units base prints "Mbyte", "usecond" (seen on an H100 run).
  const report r = parse_raw_csv(
      "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\","
      "\"dram__bytes.sum.per_second\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\"\n"
      "\"\",\"\",\"Mbyte\",\"usecond\",\"Tbyte/second\",\"%\"\n"
      "\"0\",\"copy\",\"536.88\",\"372.38\",\"2.84\",\"4.3\"\n");
  const auto& m = r.kernels.at(0).metrics;
  EXPECT_DOUBLE_EQ(m.at("dram__bytes_read.sum"), 536.88e6);
  EXPECT_DOUBLE_EQ(m.at("gpu__time_duration.sum"), 372380);
  EXPECT_DOUBLE_EQ(m.at("dram__bytes.sum.per_second"), 2.84e12);
  EXPECT_DOUBLE_EQ(m.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 4.3);
}

TEST(stages_ncu_csv, a_counter_pass_database_holds_each_launch_and_its_metrics) {
  const report r = parse_raw_csv(rpl::testing::read_text(fixture));
  temp_dir dir;
  const auto db = dir / "ncu_pass.db";
  {
    rocpd::writer w(db);
    write_counter_pass(r, w, 1);
    w.commit();
  }
  const auto reader = rocpd::reader::open({db});
  std::vector<std::int64_t> durations;
  std::vector<std::string> names;
  reader.for_each_dispatch([&](const rocpd::dispatch_row& row) {
    durations.push_back(row.end_ns - row.start_ns);
    names.emplace_back(row.kernel_name);
    EXPECT_EQ(row.pid, 716);
  });
  // gpu__time_duration.sum of the four launches: 425,120 / 160,384 / 161,248 / fourth.
  ASSERT_EQ(durations.size(), 4u);
  EXPECT_EQ(durations[0], 425120);
  EXPECT_EQ(durations[1], 160384);
  EXPECT_EQ(durations[2], 161248);
  EXPECT_EQ(names[1], "sgemm_tiled(const float *, const float *, float *, int, int, int)");
  const auto agents = reader.agents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].name, "sm_90");
  // One pmc_event row per numeric metric column and launch, joined to its dispatch's event.
  const std::size_t metrics_per_row = r.kernels[1].metrics.size();
  EXPECT_EQ(rpl::testing::query_int(db, "SELECT COUNT(*) FROM pmc_events WHERE dispatch_id = 2"),
            static_cast<long long>(metrics_per_row));
  EXPECT_EQ(rpl::testing::query_int(
                db, "SELECT CAST(counter_value AS INTEGER) FROM pmc_events WHERE dispatch_id = 2 "
                    "AND counter_name = 'smsp__sass_thread_inst_executed_op_ffma_pred_on.sum'"),
            1073741824);
  EXPECT_EQ(rpl::testing::query_texts(
                db, "SELECT value FROM rocpd_metadata WHERE tag = 'rpl_counter_pass'"),
            std::vector<std::string>{"ncu"});
}

} // namespace
} // namespace rpl::stages::ncu
