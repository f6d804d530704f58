// autotune --recorded: the engine, its strategies and its store on a recorded landscape
// (tests/fixtures/landscapes/toy.json, a Kernel Tuner cache file): nothing compiled or run.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/json_schema.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

const std::filesystem::path toy = rpl::testing::source_dir / "tests/fixtures/landscapes/toy.json";

nlohmann::json search(const temp_dir& dir,
                      const std::string& db,
                      std::vector<std::string> extra,
                      int want_exit = 0) {
  std::vector<std::string> args = {"autotune", "--recorded",        toy.string(),
                                   "--db",     (dir / db).string(), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto out = run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, want_exit) << out.output;
  const auto brace = out.output.find('{');
  return brace == std::string::npos
             ? nlohmann::json()
             : nlohmann::json::parse(out.output.substr(brace), nullptr, false);
}

TEST(cli_autotune_recorded, an_exhaustive_search_answers_every_configuration_from_the_file) {
  temp_dir dir;
  const auto doc = search(dir, "a.db", {"--strategy", "exhaustive"});
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(rpl::testing::schema_errors(doc, "autotune.schema.json"), std::vector<std::string>{});
  EXPECT_EQ(doc["backend"], "recorded");
  ASSERT_EQ(doc["candidates"].size(), 12u);
  // In the order made: exhaustive walks the file's keys in order.
  EXPECT_EQ(doc["candidates"][0]["params"]["block_size_x"], 128);
  std::size_t failed = 0;
  for (const auto& c : doc["candidates"])
    if (c["status"] != "ok") {
      ++failed;
      EXPECT_NE(c["reason"].get<std::string>().find("recorded: "), std::string::npos) << c.dump();
    }
  EXPECT_EQ(failed, 2u);
  // The winner is 64,2,2.5 at 1.25 ms (its one sample, as nanoseconds).
  EXPECT_EQ(doc["winner"]["params"]["block_size_x"], 64);
  EXPECT_EQ(doc["winner"]["params"]["tile"], 2);
  EXPECT_DOUBLE_EQ(doc["winner"]["stats"]["median_ns"].get<double>(), 1.25e6);
}

TEST(cli_autotune_recorded, a_budget_counts_configurations_and_a_seed_repeats_the_order) {
  temp_dir dir;
  for (const std::string strategy : {"random", "model"}) {
    const auto a =
        search(dir, strategy + "1.db", {"--strategy", strategy, "--budget", "6", "--seed", "4"});
    const auto b =
        search(dir, strategy + "2.db", {"--strategy", strategy, "--budget", "6", "--seed", "4"});
    ASSERT_EQ(a["candidates"].size(), 6u) << strategy;
    EXPECT_EQ(rpl::testing::schema_errors(a, "autotune.schema.json"), std::vector<std::string>{});
    EXPECT_DOUBLE_EQ(a["space_measured_fraction"].get<double>(), 0.5);
    if (strategy == "model") {
      // Twice its 3 linear features would be 6: at most half the budget, 3.
      EXPECT_EQ(a["model"]["seed_size"], 3);
      EXPECT_TRUE(a["model"].contains("cv_r2"));
      EXPECT_DOUBLE_EQ(a["model"]["confidence_r2"].get<double>(), 0.75);
    } else {
      EXPECT_TRUE(a["model"].is_null());
    }
    ASSERT_EQ(b["candidates"].size(), 6u) << strategy;
    for (std::size_t i = 0; i < 6; ++i)
      EXPECT_EQ(a["candidates"][i]["params"], b["candidates"][i]["params"]) << strategy << i;
  }
}

TEST(cli_autotune_recorded, the_models_seed_and_confirm_fractions_are_settings_with_checks) {
  temp_dir dir;
  // 12 configurations: 0.9 of them is 11 seeds (over twice the 3 linear features, 6).
  const auto doc = search(dir, "m.db",
                          {"--strategy", "model", "--budget", "12", "--seed-fraction", "0.9",
                           "--confirm-fraction", "0.25"});
  EXPECT_EQ(rpl::testing::schema_errors(doc, "autotune.schema.json"), std::vector<std::string>{});
  EXPECT_EQ(doc["model"]["seed_size"], 11);
  EXPECT_EQ(doc["model"]["unmeasured"]["count"], 0); // the whole space was measured
  // 0.1 would be 2 seeds: raised to twice the linear features, 6, so a first fit has points.
  const auto low = search(dir, "l.db", {"--strategy", "model", "--seed-fraction", "0.1"});
  EXPECT_EQ(low["model"]["seed_size"], 6);
  const auto over = run_rocm_perf({"autotune", "--recorded", toy.string(), "--strategy", "model",
                                   "--seed-fraction", "1.5", "--db", (dir / "o.db").string()});
  EXPECT_EQ(over.exit_code, 2) << over.output;
  EXPECT_NE(over.output.find("--seed-fraction 1.5"), std::string::npos) << over.output;
  EXPECT_NE(over.output.find("must be a fraction between 0 and 1"), std::string::npos)
      << over.output;
  const auto random = run_rocm_perf({"autotune", "--recorded", toy.string(), "--strategy", "random",
                                     "--confirm-fraction", "0.2", "--db", (dir / "r.db").string()});
  EXPECT_EQ(random.exit_code, 2) << random.output;
  EXPECT_NE(random.output.find("--confirm-fraction applies to --strategy model only"),
            std::string::npos)
      << random.output;
}

TEST(cli_autotune_recorded, conflicting_or_bad_inputs_are_named_with_a_fix) {
  temp_dir dir;
  const auto both = run_rocm_perf({"autotune", "--recorded", toy.string(), "--space", "s.json",
                                   "--db", (dir / "x.db").string()});
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("with --space: the recorded landscape is the space"),
            std::string::npos)
      << both.output;
  const auto missing = run_rocm_perf(
      {"autotune", "--recorded", (dir / "none.json.gz").string(), "--db", (dir / "y.db").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("none.json.gz: cannot be read"), std::string::npos)
      << missing.output;
  const auto neither = run_rocm_perf({"autotune", "--db", (dir / "z.db").string()});
  EXPECT_EQ(neither.exit_code, 2) << neither.output;
  EXPECT_NE(neither.output.find("--space is required"), std::string::npos) << neither.output;
}

TEST(cli_autotune_recorded, export_writes_a_run_as_a_cache_file_the_recorded_lane_reads_back) {
  temp_dir dir;
  ASSERT_TRUE(search(dir, "a.db", {"--strategy", "exhaustive"}).is_object());
  const auto cache = dir / "export.json";
  const auto out = run_rocm_perf({"export", "--format", "kernel-tuner", "--db",
                                  (dir / "a.db").string(), "--run", "1", "--out", cache.string()});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto doc = nlohmann::json::parse(rpl::testing::read_text(cache));
  EXPECT_EQ(doc["tune_params_keys"], (nlohmann::json{"block_size_x", "tile", "unroll"}));
  ASSERT_EQ(doc["cache"].size(), 12u);
  // Keys as Python writes them; medians in ms with their samples; the file's failure reasons.
  EXPECT_DOUBLE_EQ(doc["cache"]["64,2,2.5"]["time"].get<double>(), 1.25);
  EXPECT_EQ(doc["cache"]["64,2,2.5"]["times"], (nlohmann::json{1.25}));
  EXPECT_DOUBLE_EQ(doc["cache"]["32,1,1.0"]["time"].get<double>(), 4.0);
  EXPECT_EQ(doc["cache"]["128,1,2.5"]["time"], "CompilationFailedConfig");
  EXPECT_EQ(doc["cache"]["32,2,2.5"]["time"], "RuntimeFailedConfig");
  // Replayed: the same winner.
  const auto again = run_rocm_perf(
      {"autotune", "--recorded", cache.string(), "--db", (dir / "b.db").string(), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const auto replay = nlohmann::json::parse(again.output.substr(again.output.find('{')));
  EXPECT_EQ(replay["winner"]["params"]["block_size_x"], 64);
  EXPECT_EQ(replay["candidates"].size(), 12u);
  // A run that is not there, a database that is not there: named, exit 2.
  const auto bad_run = run_rocm_perf(
      {"export", "--format", "kernel-tuner", "--db", (dir / "a.db").string(), "--run", "9"});
  EXPECT_EQ(bad_run.exit_code, 2) << bad_run.output;
  EXPECT_NE(bad_run.output.find("--run 9: no such run"), std::string::npos) << bad_run.output;
  EXPECT_NE(bad_run.output.find("one of: 1 (run-"), std::string::npos) << bad_run.output;
  const auto no_db = run_rocm_perf({"export", "--db", (dir / "none.db").string(), "--run", "1"});
  EXPECT_EQ(no_db.exit_code, 2) << no_db.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "none.db")); // not created by asking
}

} // namespace
} // namespace rpl
