// The application pass of the sanitizer (engine/optimize/app_sanitizer.hpp) over stand-in tools:
// each improved kernel's change is run under every tool, watching that kernel alone; a finding
// refuses the change (the kernel unchanged, its diff dropped, so --apply and the second profile
// leave it out), and a kernel all four tools passed is sanitizer-checked in the report. On a GPU:
// tests/gpu/optimize_test.cpp (OptimizeGpu.a_read_past_the_end_accepted_on_the_replay_...).
#include <atomic>
#include <map>
#include <memory>
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
/// A stand-in tool: per (application, kernel, tool) a scripted outcome; clean otherwise.
struct scripted_tool {
  struct key {
    bool original; ///< the application as given, not the rebuilt one
    std::string kernel;
    std::string tool;
    auto operator<=>(const key&) const = default;
  };
  std::map<key, workers::sanitizer_outcome> script;
  std::vector<key> calls;

  workers::sanitizer_outcome operator()(const engine::app_sanitize_request& request) {
    EXPECT_EQ(request.device, 1);
    EXPECT_EQ(request.timeout, std::chrono::seconds(42));
    const key k{request.argv.front() == "./app", request.kernel.function, request.tool};
    calls.push_back(k);
    workers::sanitizer_outcome o;
    if (const auto it = script.find(k); it != script.end())
      o = it->second;
    else
      o.clean = true;
    o.tool = request.tool;
    o.log = request.log_dir / (request.log_stem + "." + request.tool + ".log");
    o.seconds = 0.5;
    return o;
  }
};

workers::sanitizer_outcome reported(const std::string& line) {
  workers::sanitizer_outcome o;
  o.reported = true;
  o.first_report = line;
  return o;
}

TEST(engine_optimize_app_sanitizer, a_finding_the_original_lacks_refuses_the_change_and_no_other) {
  rpl::testing::temp_dir dir;
  std::vector<engine::target_result> results = {improved("alpha"), improved("beta"),
                                                improved("delta"), improved("epsilon")};
  results.push_back(improved("gamma"));
  results.back().status = "unchanged"; // not improved: not run
  auto tool = std::make_shared<scripted_tool>();
  // alpha: racecheck reports on the rebuilt application only: its change's.
  tool->script[{false, "alpha", "racecheck"}] =
      reported("Error: Race reported between Write access at alpha+0x80");
  // delta: initcheck reports on both: the tool cannot judge the change.
  tool->script[{false, "delta", "initcheck"}] =
      reported("Uninitialized __global__ memory read of size 4 bytes at delta+0x10");
  tool->script[{true, "delta", "initcheck"}] =
      reported("Uninitialized __global__ memory read of size 4 bytes at delta+0x10");
  // epsilon: memcheck killed at its deadline without a report: not run.
  workers::sanitizer_outcome slow;
  slow.timed_out = true;
  slow.first_report = "no report, but under memcheck the application timed out after 42 s";
  tool->script[{false, "epsilon", "memcheck"}] = slow;
  engine::app_tools tools;
  tools.sanitizer_missing = [] { return std::string(); };
  tools.sanitize = [tool](const engine::app_sanitize_request& r) { return (*tool)(r); };
  engine::app_sanitizer_pass pass;
  pass.argv = {"./app-build/app", "5"};
  pass.original_argv = {"./app", "5"};
  pass.symbols = {{"alpha", "_Z5alphaPf"}, {"beta", "_Z4betaPf"}};
  pass.log_dir = dir / "sanitizer";
  pass.device = 1;
  pass.tool_timeout = std::chrono::seconds(42);
  std::atomic<bool> stop{false};
  const auto summary = engine::sanitize_accepted(results, pass, tools, stop);

  // alpha: memcheck, racecheck (and the original's racecheck), then stopped; beta: four; delta:
  // four and the original's initcheck; epsilon: four; gamma: none.
  EXPECT_EQ(tool->calls.size(), 3u + 4u + 5u + 4u);
  EXPECT_TRUE(summary["ran"].get<bool>());
  ASSERT_EQ(summary["refused"].size(), 1u) << summary.dump();
  EXPECT_TRUE(summary["refused"].contains("alpha")) << summary.dump();

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

  for (const std::size_t i : {std::size_t{2}, std::size_t{3}}) { // kept, not checked by all four
    EXPECT_EQ(results[i].status, "improved") << results[i].kernel;
    EXPECT_FALSE(engine::sanitizer_checked(results[i].attempts[1].validation));
  }
  const auto delta = nlohmann::json::parse(results[2].attempts[1].validation);
  EXPECT_EQ(delta[3]["status"], "original_finding") << delta.dump(1);
  EXPECT_NE(delta[3]["reason"].get<std::string>().find("cannot judge the change"),
            std::string::npos);
  const auto epsilon = nlohmann::json::parse(results[3].attempts[1].validation);
  EXPECT_EQ(epsilon[1]["status"], "not_run") << epsilon.dump(1);
  EXPECT_EQ(results[4].status, "unchanged");
}

TEST(engine_optimize_app_sanitizer, without_a_sanitizer_nothing_changes_and_the_report_says_why) {
  rpl::testing::temp_dir dir;
  std::vector<engine::target_result> results = {improved("alpha")};
  engine::app_tools tools;
  tools.sanitizer_missing = [] { return std::string("no compute-sanitizer (PATH)"); };
  tools.sanitize = [](const engine::app_sanitize_request&) -> workers::sanitizer_outcome {
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
  const workers::app_kernel_watch alpha{"_Z5alphaPf", "alpha"};
  const auto clean = workers::run_app_sanitizer(o, "memcheck", app, alpha);
  EXPECT_TRUE(clean.clean) << clean.first_report;
  EXPECT_EQ(clean.log, dir / "app.alpha.memcheck.log");
  EXPECT_EQ(rpl::testing::read_text(dir / "app.alpha.memcheck.out"), "app ran on 2\n");
  const std::string passed = rpl::testing::read_text(args);
  EXPECT_NE(passed.find("--kernel-name\nkne=_Z5alphaPf\n--padding\n4096\nsh\n"), std::string::npos)
      << passed;
  EXPECT_NE(passed.find("--error-exitcode\n86"), std::string::npos) << passed;

  rpl::testing::scoped_env racy("FAKE_SANITIZER_REPORT", "racecheck");
  const auto found = workers::run_app_sanitizer(o, "racecheck", app, alpha);
  EXPECT_FALSE(found.clean);
  EXPECT_TRUE(found.reported);
  EXPECT_EQ(found.first_report,
            "Error: Race reported between Write access at rpl_k+0x1a0 in k.cu:12");

  // initcheck watches every kernel (another's writes would look uninitialized to it otherwise):
  // a report located in another function is not alpha's, and the run is clean for alpha.
  fs::remove(args);
  rpl::testing::scoped_env init("FAKE_SANITIZER_REPORT", "initcheck");
  const auto other = workers::run_app_sanitizer(o, "initcheck", app, alpha);
  EXPECT_TRUE(other.clean) << other.first_report;
  EXPECT_FALSE(other.reported);
  EXPECT_NE(other.other_report.find("rpl_k+0x1a0"), std::string::npos) << other.other_report;
  EXPECT_EQ(rpl::testing::read_text(args).find("--kernel-name"), std::string::npos);
  const auto mine = workers::run_app_sanitizer(o, "initcheck", app, {"_Z5rpl_kv", "rpl_k"});
  EXPECT_TRUE(mine.reported);
  EXPECT_FALSE(mine.clean);

  const auto failed = workers::run_app_sanitizer(o, "synccheck", {"sh", "-c", "exit 3"}, alpha);
  EXPECT_FALSE(failed.clean) << "an application that fails under the tool is no evidence";
  EXPECT_FALSE(failed.reported);
  EXPECT_NE(failed.first_report.find("the application exited with status 3"), std::string::npos)
      << failed.first_report;
}

} // namespace
} // namespace rpl
