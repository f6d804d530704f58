// The determinism check (issue 13, item 3): --determinism-check FRACTION compiles that fraction of
// builds a second time on another worker and compares the artifacts. A reproducible build (g++
// -O0) matches; a build with -g embeds its compilation folder (each worker's own job folder), so
// its artifacts differ, and that is reported, not hidden. Real local worker processes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace rpl {
namespace {

using rpl::testing::fixture;
using rpl::testing::query_int;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

std::vector<std::string> args(const std::filesystem::path& db,
                              const std::string& build,
                              const std::string& workers,
                              const std::string& fraction) {
  return {"autotune",
          "--space",
          fixture("space-ok.json").string(),
          "--source",
          fixture("candidate.cpp").string(),
          "--build-template",
          build,
          "--cmd-template",
          "{BIN}",
          "--runs",
          "3",
          "--timeout",
          "1",
          "--compile-workers",
          workers,
          "--determinism-check",
          fraction,
          "--db",
          db.string(),
          "--json"};
}

nlohmann::json json_of(const std::string& output) {
  const auto start = output.find("{\n");
  return start == std::string::npos ? nlohmann::json()
                                    : nlohmann::json::parse(output.substr(start));
}

TEST(determinism_check, reproducible_builds_match_on_two_workers) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto out = run_rocm_perf(args(db, rpl::testing::fixture_build_template, "2", "1"));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = json_of(out.output);
  EXPECT_EQ(doc["determinism"]["checked"], 4) << doc["determinism"];
  EXPECT_EQ(doc["determinism"]["mismatched"], 0);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM determinism_checks WHERE same = 1 AND "
                          "worker_a <> worker_b"),
            4);
}

TEST(determinism_check, a_build_that_embeds_its_folder_is_reported_and_the_run_goes_on) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto out = run_rocm_perf(
      args(db, "g++ -g -O0 -DMODE={MODE} -DSLEEP_US={SLEEP_US} candidate.cpp -o {OUT}", "2", "1"));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = json_of(out.output);
  EXPECT_EQ(doc["determinism"]["checked"], 4) << doc["determinism"];
  EXPECT_EQ(doc["determinism"]["mismatched"], 4);
  EXPECT_NE(out.output.find("differs between workers"), std::string::npos) << out.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM determinism_checks WHERE same = 0"), 4);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates WHERE status = 'ok'"), 4);
}

TEST(determinism_check, one_worker_skips_and_a_bad_fraction_is_bad_input) {
  temp_dir dir;
  auto out = run_rocm_perf(args(dir / "a.db", rpl::testing::fixture_build_template, "1", "1"));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = json_of(out.output);
  EXPECT_EQ(doc["determinism"]["checked"], 0) << doc["determinism"];
  EXPECT_EQ(doc["determinism"]["skipped"], 4);
  out = run_rocm_perf(args(dir / "b.db", rpl::testing::fixture_build_template, "1", "1.5"));
  EXPECT_EQ(out.exit_code, 2) << out.output;
}

} // namespace
} // namespace rpl
