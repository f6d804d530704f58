// The application pass of the sanitizer (engine/optimize/app_sanitizer.hpp) over stand-in tools:
// each improved kernel's change is run under every tool, watching that kernel alone; a finding
// refuses the change (the kernel unchanged, its diff dropped, so --apply and the second profile
// leave it out), and a kernel all four tools passed is sanitizer-checked in the report. On a GPU:
// tests/gpu/optimize_test.cpp (OptimizeGpu.a_read_past_the_end_accepted_on_the_replay_...).
#include <atomic>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "engine/optimize/app_sanitizer.hpp"
#include "engine/optimize/proposal_guard.hpp"
#include "support/scoped_env.hpp"
#include "support/test_support.hpp"
#include "workers/lanes/kernel/sanitizer_pass.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;

using engine::attempt_finding;
using engine::attempt_stage;
using engine::attempt_verdict;

engine::target_result improved(const std::string& kernel) {
  engine::target_result r;
  r.kernel = kernel;
  r.status = "improved";
  r.original_ns = 2000;
  r.best_ns = 1000;
  r.accepted_diff = "--- a/k.cu\n+++ b/k.cu\n";
  r.best_source = "// faster";
  engine::attempt_record rejected;
  rejected.verdict = attempt_verdict::rejected;
  rejected.validation = "[]";
  engine::attempt_record accepted;
  accepted.verdict = attempt_verdict::accepted;
  accepted.stage = attempt_stage::accepted;
  accepted.validation = R"([{"case":"sanitizer","status":"not_run","reason":"a replay"}])";
  r.attempts = {rejected, accepted};
  return r;
}

struct call {
  std::string symbol;
  std::string tool;
};

TEST(engine_optimize_app_sanitizer,
     a_finding_refuses_that_kernels_change_and_the_rest_are_checked) {
  rpl::testing::temp_dir dir;
  std::vector<engine::target_result> results = {improved("alpha"), improved("beta")};
  results.push_back(improved("gamma"));
  results.back().status = "unchanged"; // not improved: not run
  std::vector<call> calls;
  engine::app_tools tools;
  tools.sanitizer_missing = [] { return std::string(); };
  tools.sanitize = [&](const std::vector<std::string>& argv, const std::string& symbol,
                       const std::string& tool, const std::filesystem::path& log_dir,
                       const std::string& log_stem, int device) {
    EXPECT_EQ(argv, (std::vector<std::string>{"./app-build/app", "5"}));
    EXPECT_EQ(device, 1);
    calls.push_back({symbol, tool});
    workers::sanitizer_outcome o;
    o.tool = tool;
    o.log = log_dir / (log_stem + "." + tool + ".log");
    o.seconds = 0.5;
    o.clean = !(symbol == "_Z5alphaPf" && tool == "racecheck");
    if (!o.clean)
      o.first_report = "Error: Race reported between Write access at alpha+0x80";
    return o;
  };
  engine::app_sanitizer_pass pass;
  pass.argv = {"./app-build/app", "5"};
  pass.symbols = {{"alpha", "_Z5alphaPf"}, {"beta", "_Z4betaPf"}};
  pass.log_dir = dir / "sanitizer";
  pass.device = 1;
  std::atomic<bool> stop{false};
  const auto summary = engine::sanitize_accepted(results, pass, tools, stop);

  // alpha: memcheck clean, racecheck's finding ends its pass; beta: all four; gamma: none.
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls[0].symbol, "_Z5alphaPf");
  EXPECT_EQ(calls[1].tool, "racecheck");
  EXPECT_EQ(calls[2].symbol, "_Z4betaPf");
  EXPECT_EQ(calls[5].tool, "synccheck");
  EXPECT_TRUE(summary["ran"].get<bool>());
  EXPECT_DOUBLE_EQ(summary["seconds"].get<double>(), 3.0);
  ASSERT_TRUE(summary["refused"].contains("alpha")) << summary.dump();
  EXPECT_EQ(summary["refused"].size(), 1u);

  const auto& alpha = results[0];
  EXPECT_EQ(alpha.status, "unchanged");
  EXPECT_TRUE(alpha.accepted_diff.empty()) << "--apply and the rebuild take only improved diffs";
  EXPECT_EQ(alpha.best_ns, alpha.original_ns);
  EXPECT_NE(alpha.reason.find("racecheck"), std::string::npos) << alpha.reason;
  EXPECT_NE(alpha.reason.find("Race reported"), std::string::npos) << alpha.reason;
  EXPECT_EQ(alpha.attempts[1].verdict, attempt_verdict::rejected);
  EXPECT_EQ(alpha.attempts[1].stage, attempt_stage::sanitizer);
  EXPECT_EQ(alpha.attempts[1].guard, attempt_finding::sanitizer_racecheck);
  EXPECT_EQ(alpha.attempts[0].stage, attempt_stage::none) << "an earlier rejection stays";
  EXPECT_FALSE(engine::sanitizer_checked(alpha.attempts[1].validation));

  const auto& beta = results[1];
  EXPECT_EQ(beta.status, "improved");
  EXPECT_FALSE(beta.accepted_diff.empty());
  EXPECT_TRUE(engine::sanitizer_checked(beta.attempts[1].validation))
      << beta.attempts[1].validation;
  const auto record = nlohmann::json::parse(beta.attempts[1].validation);
  EXPECT_EQ(record.size(), 5u) << "the replay's not_run, then the four tools";
  EXPECT_EQ(record[1]["scope"], "application");
  EXPECT_EQ(results[2].status, "unchanged");
}

TEST(engine_optimize_app_sanitizer, without_a_sanitizer_nothing_changes_and_the_report_says_why) {
  rpl::testing::temp_dir dir;
  std::vector<engine::target_result> results = {improved("alpha")};
  engine::app_tools tools;
  tools.sanitizer_missing = [] { return std::string("no compute-sanitizer (PATH)"); };
  tools.sanitize = [](const std::vector<std::string>&, const std::string&, const std::string&,
                      const std::filesystem::path&, const std::string&,
                      int) -> workers::sanitizer_outcome {
    ADD_FAILURE() << "not to be run";
    return {};
  };
  engine::app_sanitizer_pass pass;
  pass.log_dir = dir / "sanitizer";
  std::atomic<bool> stop{false};
  const auto summary = engine::sanitize_accepted(results, pass, tools, stop);
  EXPECT_FALSE(summary["ran"].get<bool>());
  EXPECT_EQ(summary["not_run"], "no compute-sanitizer (PATH)");
  EXPECT_EQ(results[0].status, "improved");
  EXPECT_FALSE(engine::sanitizer_checked(results[0].attempts[1].validation));
}

TEST(workers_app_sanitizer, the_application_runs_under_the_tool_watching_one_kernel) {
  rpl::testing::temp_dir dir;
  const fs::path args = dir / "args.txt";
  rpl::testing::scoped_env record("FAKE_SANITIZER_ARGS", args.c_str());
  rpl::testing::scoped_env report("FAKE_SANITIZER_REPORT", nullptr);
  workers::sanitizer_options o;
  o.sanitizer = fs::path(RPL_SOURCE_DIR) / "tests" / "tools" / "fake_compute_sanitizer.sh";
  o.device = 2;
  o.log_dir = dir.path();
  o.log_stem = "app.alpha";
  o.timeout = std::chrono::seconds(20);
  const std::vector<std::string> app = {"sh", "-c", "echo app ran on $CUDA_VISIBLE_DEVICES"};
  const auto clean = workers::run_app_sanitizer(o, "memcheck", app, "kne=_Z5alphaPf");
  EXPECT_TRUE(clean.clean) << clean.first_report;
  EXPECT_EQ(clean.log, dir / "app.alpha.memcheck.log");
  EXPECT_EQ(rpl::testing::read_text(dir / "app.alpha.memcheck.out"), "app ran on 2\n");
  const std::string passed = rpl::testing::read_text(args);
  EXPECT_NE(passed.find("--kernel-name\nkne=_Z5alphaPf\n--padding\n4096\nsh\n"), std::string::npos)
      << passed;
  EXPECT_NE(passed.find("--error-exitcode\n86"), std::string::npos) << passed;

  rpl::testing::scoped_env racy("FAKE_SANITIZER_REPORT", "racecheck");
  const auto found = workers::run_app_sanitizer(o, "racecheck", app, "kne=_Z5alphaPf");
  EXPECT_FALSE(found.clean);
  EXPECT_EQ(found.first_report,
            "Error: Race reported between Write access at rpl_k+0x1a0 in k.cu:12");

  const auto failed =
      workers::run_app_sanitizer(o, "initcheck", {"sh", "-c", "exit 3"}, "kne=_Z5alphaPf");
  EXPECT_FALSE(failed.clean) << "an application that fails under the tool is no evidence";
  EXPECT_NE(failed.first_report.find("the application exited with status 3"), std::string::npos)
      << failed.first_report;
}

} // namespace
} // namespace rpl
