// The artifact cache as a user meets it (issue 13): the same sweep run again compiles nothing, nor
// does --resume of an interrupted one; --no-compile-cache compiles everything.
#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::fixture;
using rpl::testing::query_int;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

std::vector<std::string> sweep(const std::filesystem::path& space,
                               const std::filesystem::path& db) {
  return {"autotune",
          "--space",
          space.string(),
          "--source",
          fixture("candidate.cpp").string(),
          "--build-template",
          rpl::testing::fixture_build_template,
          "--cmd-template",
          "{BIN}",
          "--runs",
          "3",
          "--warmup",
          "1",
          "--timeout",
          "5",
          "--compile-workers",
          "2",
          "--heartbeat-ms",
          "100",
          "--db",
          db.string(),
          "--json"};
}

nlohmann::json run_json(const std::vector<std::string>& args) {
  const auto out = run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 0) << out.output;
  const auto start = out.output.find("{\n");
  if (start == std::string::npos) {
    ADD_FAILURE() << out.output;
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(out.output.substr(start));
}

TEST(cli_compile_cache, the_same_sweep_again_compiles_nothing) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto first = run_json(sweep(fixture("space-ok.json"), db));
  EXPECT_EQ(first["compile_cache"]["compiled"], 4);
  EXPECT_EQ(first["compile_cache"]["hits"], 0);

  const auto second = run_json(sweep(fixture("space-ok.json"), db));
  EXPECT_EQ(second["compile_cache"]["compiled"], 0);
  EXPECT_EQ(second["compile_cache"]["hits"], 4);
  EXPECT_EQ(second["status"], "finished");
  EXPECT_EQ(second["counts"]["measured"], 4);
  // The second run's artifacts are the first run's, named as cached.
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM artifacts WHERE run_id = '" +
                              second["run_id"].get<std::string>() +
                              "' AND worker_id LIKE 'cache:%' AND compile_status = 'ok'"),
            4);

  // A changed source is a different build.
  rpl::testing::write_file(dir / "candidate.cpp",
                           rpl::testing::read_text(fixture("candidate.cpp")) + "\n// changed\n");
  auto changed = sweep(fixture("space-ok.json"), db);
  *(std::find(changed.begin(), changed.end(), "--source") + 1) = (dir / "candidate.cpp").string();
  const auto third = run_json(changed);
  EXPECT_EQ(third["compile_cache"]["compiled"], 4);

  auto forced = sweep(fixture("space-ok.json"), db);
  forced.push_back("--no-compile-cache");
  const auto fourth = run_json(forced);
  EXPECT_EQ(fourth["compile_cache"]["compiled"], 4);
  EXPECT_EQ(fourth["compile_cache"]["hits"], 0);
}

TEST(cli_compile_cache, resume_of_an_interrupted_sweep_compiles_nothing_built_before) {
  temp_dir dir;
  const auto db = dir / "r.db";
  // Four candidates of 4 x 0.3 s each: all four are built long before the lane is through.
  rpl::testing::write_file(
      dir / "space.json",
      R"({"params": {"MODE": [0], "SLEEP_US": [300000, 300001, 300002, 300003]}})");
  auto args = sweep(dir / "space.json", db);
  workers::child_options options;
  options.argv = {rpl::testing::rocm_perf.string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.capture_output = false;
  auto engine = workers::child_process::spawn(options);
  ASSERT_TRUE(engine.launched());
  ASSERT_TRUE(rpl::testing::wait_until(
      [&] {
        try {
          return query_int(db, "SELECT COUNT(*) FROM compile_cache") == 4;
        } catch (...) {
          return false; // not created yet, or busy
        }
      },
      60s));
  ::kill(engine.pid(), SIGINT);
  const auto stopped = engine.finish();
  ASSERT_EQ(stopped.exit_code, 130);
  const auto stored = query_int(db, "SELECT COUNT(*) FROM candidates");
  ASSERT_LT(stored, 4) << "the sweep ended before the signal; nothing left to resume";

  args.push_back("--resume");
  const auto resumed = run_json(args);
  EXPECT_EQ(resumed["status"], "finished");
  EXPECT_EQ(resumed["counts"]["resumed"], stored);
  EXPECT_EQ(resumed["compile_cache"]["compiled"], 0);
  EXPECT_EQ(resumed["compile_cache"]["hits"], 4 - stored);
}

} // namespace
} // namespace rpl
