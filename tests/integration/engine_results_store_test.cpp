#include <gtest/gtest.h>

#include "engine/store/results_store.hpp"
#include "support/test_support.hpp"

namespace rpl::engine {
namespace {

using rpl::testing::query_int;
using rpl::testing::temp_dir;

run_record make_run(const std::string& id, const std::string& fingerprint) {
  run_record run;
  run.run_id = id;
  run.fingerprint = fingerprint;
  run.status = "running";
  run.space_file = "space.json";
  run.strategy = "exhaustive";
  run.planned = 3;
  run.settings = {{"runs", 3}};
  return run;
}

candidate_record make_candidate(const std::string& key, bool valid) {
  candidate_record c;
  c.key = key;
  c.space_index = 2;
  c.params = {{"TILE", 16}, {"FLAG", "-O3"}};
  c.build_argv = {"g++", "k.cpp", "-o", "{OUT}"};
  c.run_argv = {"{BIN}"};
  c.compile.status = valid ? messages::compile_status::ok : messages::compile_status::failed;
  c.compile.compile_ns = 5'000'000;
  c.compile.output = valid ? "" : "k.cpp:1: error: boom";
  if (valid) {
    c.measure.status = messages::measure_status::ok;
    c.measure.samples_ns = {100, 110, 120};
    c.stats = stages::summarize(c.measure.samples_ns);
    c.verdict.decision = messages::verdict_kind::faster;
    c.verdict.best_key = key;
  } else {
    c.measure.status = messages::measure_status::not_run;
    c.verdict.decision = messages::verdict_kind::invalid;
    c.verdict.reason = "compile_failed: k.cpp:1: error: boom";
  }
  c.verdict.candidate_key = key;
  return c;
}

TEST(results_store, records_a_candidate_with_its_samples_artifact_and_verdict) {
  temp_dir dir;
  const auto db = dir / "r.db";
  {
    results_store store(db);
    store.create_run(make_run("run-a", "fp"));
    store.record("run-a", make_candidate("k1", true));
    store.record("run-a", make_candidate("k2", false));
  }
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates WHERE run_id='run-a'"), 2);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM measurements WHERE key='k1'"), 3);
  EXPECT_EQ(query_int(db, "SELECT SUM(duration_ns) FROM measurements WHERE key='k1'"), 330);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM measurements WHERE key='k2'"), 0);
  EXPECT_EQ(query_int(db, "SELECT compile_ns FROM artifacts WHERE key='k2'"), 5'000'000);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM verdicts WHERE verdict='invalid'"), 1);
  EXPECT_EQ(rpl::testing::query_texts(db, "PRAGMA journal_mode")[0], "wal");

  results_store reopened(db);
  const auto rows = reopened.candidates("run-a");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "k1");
  EXPECT_EQ(rows[0].status, "ok");
  EXPECT_DOUBLE_EQ(rows[0].stats.median, 110.0);
  EXPECT_EQ(rows[0].best_key, "k1");
  EXPECT_EQ(rows[0].params["TILE"], 16);
  EXPECT_EQ(rows[0].params["FLAG"], "-O3");
  EXPECT_EQ(rows[1].status, "invalid");
  EXPECT_NE(rows[1].reason.find("boom"), std::string::npos);
  EXPECT_EQ(rows[1].compile_status, "compile_failed");
}

TEST(results_store, keeps_a_candidates_clock_evidence_and_none_where_there_was_none) {
  temp_dir dir;
  const auto db = dir / "r.db";
  auto throttled = make_candidate("k1", true);
  messages::gpu_clocks& k = throttled.measure.clocks;
  k.read = true;
  k.sm_mhz_before = 345;
  k.sm_mhz_after = 1755;
  k.reasons_before = 0x1;
  k.reasons_after = 0x4;
  k.power_violation_ns = 2'000'000;
  k.thermal_violation_ns = -1;
  k.throttled = true;
  {
    results_store store(db);
    store.create_run(make_run("run-a", "fp"));
    store.record("run-a", throttled);
    store.record("run-a", make_candidate("k2", true));
  }
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidate_clocks WHERE throttled=1"), 1);
  EXPECT_EQ(rpl::testing::query_texts(db, "SELECT value FROM meta WHERE key='schema_version'")[0],
            "7");
  const auto rows = results_store(db).candidates("run-a");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].clocks.read);
  EXPECT_EQ(rows[0].clocks.sm_mhz_after, 1755u);
  EXPECT_EQ(rows[0].clocks.reasons_after, 0x4u);
  EXPECT_EQ(rows[0].clocks.power_violation_ns, 2'000'000);
  EXPECT_EQ(rows[0].clocks.thermal_violation_ns, -1) << "unknown stays unknown";
  EXPECT_TRUE(rows[0].clocks.throttled);
  EXPECT_FALSE(rows[1].clocks.read) << "no evidence is not evidence of no throttling";
}

TEST(results_store, keeps_the_processes_a_candidate_left_behind_and_none_from_older_files) {
  temp_dir dir;
  const auto db = dir / "r.db";
  auto daemonizing = make_candidate("k1", true);
  daemonizing.measure.leftover_processes = 3;
  {
    results_store store(db);
    store.create_run(make_run("run-a", "fp"));
    store.record("run-a", daemonizing);
    store.record("run-a", make_candidate("k2", true));
  }
  EXPECT_EQ(query_int(db, "SELECT leftover_processes FROM candidate_processes WHERE key='k1'"), 3);
  {
    const auto rows = results_store(db).candidates("run-a");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].leftover_processes, std::optional<std::uint32_t>(3));
    EXPECT_EQ(rows[1].leftover_processes, std::optional<std::uint32_t>(0));
  }
  // A file written before schema 4 has no candidate_processes: it opens, gains the table, and
  // its candidates say "not recorded" rather than "none".
  {
    stages::sqlite::connection older(db, SQLITE_OPEN_READWRITE);
    older.exec("DROP TABLE candidate_processes");
    older.exec("UPDATE meta SET value = '3' WHERE key = 'schema_version'");
  }
  results_store reopened(db);
  EXPECT_EQ(rpl::testing::query_texts(db, "SELECT value FROM meta WHERE key='schema_version'")[0],
            "7");
  reopened.record("run-a", make_candidate("k3", true));
  const auto rows = reopened.candidates("run-a");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].leftover_processes.has_value());
  EXPECT_EQ(rows[2].leftover_processes, std::optional<std::uint32_t>(0));
}

TEST(results_store, keeps_a_raced_candidates_interval_and_the_bound_it_lost_to) {
  rpl::testing::temp_dir dir;
  const auto db = dir / "r.db";
  {
    results_store store(db);
    store.create_run(make_run("run-a", "fp"));
    auto best = make_candidate("best", true);
    best.measure.sampling = "converged";
    best.measure.interval_low_ns = 100;
    best.measure.interval_high_ns = 120;
    store.record("run-a", best);
    auto raced = make_candidate("raced", true);
    raced.measure.sampling = "raced";
    raced.measure.interval_low_ns = 150;
    raced.measure.interval_high_ns = 170;
    raced.measure.race_bound_ns = 120;
    store.record("run-a", raced);
    store.record("run-a", make_candidate("timing", true)); // a lane that computes no interval
  }
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidate_intervals"), 2);
  const auto rows = results_store(db).candidates("run-a");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].interval_high_ns, 120.0);
  EXPECT_FALSE(rows[0].race_bound_ns);
  EXPECT_EQ(rows[1].sampling, "raced");
  EXPECT_EQ(rows[1].interval_low_ns, 150.0);
  EXPECT_EQ(rows[1].race_bound_ns, 120.0);
  EXPECT_FALSE(rows[2].interval_low_ns);
}

TEST(results_store, finds_the_latest_run_with_a_fingerprint) {
  temp_dir dir;
  results_store store(dir / "r.db");
  EXPECT_FALSE(store.find_run("fp").has_value());
  store.create_run(make_run("run-1", "fp"));
  store.create_run(make_run("run-2", "other"));
  store.create_run(make_run("run-3", "fp"));
  store.set_run_status("run-3", "interrupted");
  const auto found = store.find_run("fp");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->run_id, "run-3");
  EXPECT_EQ(found->status, "interrupted");
  EXPECT_EQ(found->settings["runs"], 3);
}

TEST(results_store, recording_a_candidate_twice_keeps_one_row_and_one_set_of_samples) {
  temp_dir dir;
  const auto db = dir / "r.db";
  results_store store(db);
  store.create_run(make_run("run-a", "fp"));
  store.record("run-a", make_candidate("k1", true));
  store.record("run-a", make_candidate("k1", true));
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates"), 1);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM measurements"), 3);
}

TEST(results_store, a_file_that_is_not_sqlite_is_refused_with_its_name_and_a_fix) {
  temp_dir dir;
  const auto bogus = dir / "notes.txt";
  rpl::testing::write_file(bogus, std::string(4096, 'x'));
  try {
    results_store store(bogus);
    FAIL() << "opened a text file as a results database";
  } catch (const store_error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("notes.txt"), std::string::npos) << what;
    EXPECT_NE(what.find("fix:"), std::string::npos) << what;
  }
}

TEST(results_store, an_unwritable_path_is_refused_with_a_fix) {
  try {
    results_store store("/nonexistent-dir/x/r.db");
    FAIL();
  } catch (const store_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-dir/x/r.db"), std::string::npos);
  }
}

} // namespace
} // namespace rpl::engine
