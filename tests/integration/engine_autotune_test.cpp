#include <future>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/autotune/autotune.hpp"
#include "support/test_support.hpp"

namespace rpl::engine {
namespace {

using namespace std::chrono_literals;
using rpl::testing::query_int;

class autotune_test : public ::testing::Test {
protected:
  autotune_options options(const std::string& space_json) {
    rpl::testing::write_file(dir_ / "space.json", space_json);
    autotune_options o;
    o.space_file = dir_ / "space.json";
    o.build_template = rpl::testing::fixture_build_template;
    o.cmd_template = "{BIN}";
    o.sources = {rpl::testing::fixture("candidate.cpp")};
    o.compile_workers = 2;
    o.runs = 3;
    o.warmup = 1;
    o.timeout_s = 1.0;
    o.db = dir_ / "results.db";
    o.heartbeat = 100ms;
    o.worker_executable = rpl::testing::rocm_perf;
    return o;
  }
  const stored_candidate& by_mode(const autotune_result& r, int mode) {
    for (const auto& c : r.candidates) {
      if (c.params["MODE"] == mode) {
        return c;
      }
    }
    throw std::runtime_error("no candidate with MODE " + std::to_string(mode));
  }
  rpl::testing::temp_dir dir_;
  std::atomic<bool> stop_{false};
};

TEST_F(autotune_test, a_full_sweep_records_every_outcome_with_its_reason) {
  const auto o = options(R"({"params": {"MODE": [0, 1, 2, 3, 4], "SLEEP_US": [1000]}})");
  const auto result = run_autotune(o, {}, stop_);
  EXPECT_EQ(result.run_status, "finished");
  ASSERT_EQ(result.candidates.size(), 5u);
  EXPECT_EQ(result.counts.completed, 5u);
  EXPECT_EQ(result.counts.measured, 1u);
  EXPECT_EQ(result.counts.failed, 4u);

  const auto& ok = by_mode(result, 0);
  EXPECT_EQ(ok.status, "ok");
  EXPECT_EQ(ok.stats.n, 3u);
  EXPECT_GE(ok.stats.min, 1e6); // it sleeps 1 ms
  EXPECT_EQ(result.winner_key, ok.key);

  const auto& crash = by_mode(result, 1);
  EXPECT_EQ(crash.status, "invalid");
  EXPECT_NE(crash.reason.find("SIGSEGV"), std::string::npos) << crash.reason;

  const auto& hang = by_mode(result, 2);
  EXPECT_EQ(hang.status, "invalid");
  EXPECT_NE(hang.reason.find("timed out"), std::string::npos) << hang.reason;

  const auto& bad_exit = by_mode(result, 3);
  EXPECT_NE(bad_exit.reason.find("status 3"), std::string::npos) << bad_exit.reason;

  const auto& broken = by_mode(result, 4);
  EXPECT_EQ(broken.compile_status, "compile_failed");
  EXPECT_NE(broken.reason.find("fails to compile on purpose"), std::string::npos) << broken.reason;

  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM measurements"), 3);
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM runs WHERE status='finished'"), 1);
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM artifacts WHERE hash IS NOT NULL"), 4);
}

TEST_F(autotune_test, a_compile_worker_killed_mid_sweep_loses_no_candidate) {
  auto o = options(
      R"({"params": {"MODE": [0], "SLEEP_US": [1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900]}})");
  std::atomic<int> killed{0};
  std::atomic<pid_t> victim{0};
  const auto result = run_autotune(
      o,
      [&](const autotune_progress& p) {
        if (p.counts.completed == 2 && killed == 0) {
          const auto workers = rpl::testing::children_of(getpid(), "worker compile");
          if (!workers.empty()) {
            victim = workers.front();
            killed = ::kill(workers.front(), SIGKILL) == 0 ? 1 : -1;
          }
        }
      },
      stop_);
  ASSERT_EQ(killed.load(), 1) << "no worker was killed";
  EXPECT_FALSE(rpl::testing::process_alive(victim));
  EXPECT_EQ(result.run_status, "finished");
  ASSERT_EQ(result.candidates.size(), 10u);
  for (const auto& c : result.candidates) {
    EXPECT_EQ(c.status, "ok") << c.key << ": " << c.reason;
  }
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(DISTINCT key) FROM measurements"), 10);
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM measurements"), 30);
}

TEST_F(autotune_test, a_second_session_with_resume_measures_nothing_twice) {
  auto o = options(R"({"params": {"MODE": [0], "SLEEP_US": [1000, 2000, 3000]}})");
  const auto first = run_autotune(o, {}, stop_);
  ASSERT_EQ(first.counts.completed, 3u);
  o.resume = true;
  const auto second = run_autotune(o, {}, stop_);
  EXPECT_EQ(second.run_id, first.run_id);
  EXPECT_EQ(second.counts.completed, 0u);
  EXPECT_EQ(second.counts.resumed, 3u);
  EXPECT_EQ(second.winner_key, first.winner_key);
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM measurements"), 9);
}

TEST_F(autotune_test, stopping_finishes_in_flight_candidates_and_marks_the_run_interrupted) {
  auto o = options(
      R"({"params": {"MODE": [0], "SLEEP_US": [1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007]}})");
  o.compile_workers = 1;
  o.max_in_flight = 1;
  const auto result = run_autotune(
      o, [&](const autotune_progress& p) { stop_ = p.counts.completed >= 2; }, stop_);
  EXPECT_EQ(result.run_status, "interrupted");
  EXPECT_EQ(result.candidates.size(), 2u);
  stop_ = false;
  o.resume = true;
  const auto rest = run_autotune(o, {}, stop_);
  EXPECT_EQ(rest.run_status, "finished");
  EXPECT_EQ(rest.counts.resumed, 2u);
  EXPECT_EQ(rest.candidates.size(), 8u);
}

TEST_F(autotune_test, workers_that_cannot_start_fail_the_candidates_instead_of_hanging) {
  auto o = options(R"({"params": {"MODE": [0], "SLEEP_US": [1000, 2000]}})");
  o.worker_executable = "/bin/false";
  const auto result = run_autotune(o, {}, stop_);
  EXPECT_EQ(result.run_status, "finished");
  ASSERT_EQ(result.candidates.size(), 2u);
  for (const auto& c : result.candidates) {
    EXPECT_EQ(c.compile_status, "worker_lost");
    EXPECT_NE(c.reason.find("restart budget"), std::string::npos) << c.reason;
  }
  EXPECT_TRUE(result.winner_key.empty());
}

TEST_F(autotune_test, bad_input_is_refused_before_a_run_is_written) {
  auto o = options(R"({"params": {"MODE": [0], "SLEEP_US": [1000]}})");
  o.build_template = "g++ -DMODE={MODE} -DX={NOPE} candidate.cpp -o {OUT}";
  try {
    run_autotune(o, {}, stop_);
    FAIL() << "an unknown placeholder was accepted";
  } catch (const config_error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("--build-template"), std::string::npos) << what;
    EXPECT_NE(what.find("NOPE"), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(o.db));
}

} // namespace
} // namespace rpl::engine
