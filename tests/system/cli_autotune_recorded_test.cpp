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
    ASSERT_EQ(b["candidates"].size(), 6u) << strategy;
    for (std::size_t i = 0; i < 6; ++i)
      EXPECT_EQ(a["candidates"][i]["params"], b["candidates"][i]["params"]) << strategy << i;
  }
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

} // namespace
} // namespace rpl
