// Candidates whose runs leave processes behind (issue 10): `rocm-perf autotune` kills what a run
// left running, daemons that called setsid() included, before the next run starts, and flags the
// candidate (leftover_processes in the store and the JSON, a warning in the log).

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/json_schema.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::fixture;
using rpl::testing::query_int;
using rpl::testing::temp_dir;

/// Pids of the live processes whose environment holds `entry` (NAME=VALUE).
std::vector<pid_t> processes_with(const std::string& entry) {
  std::vector<pid_t> found;
  for (const auto& proc : std::filesystem::directory_iterator("/proc")) {
    const auto name = proc.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (!rpl::testing::process_alive(pid))
      continue;
    const std::string environ_text = rpl::testing::read_text(proc.path() / "environ");
    std::size_t start = 0;
    while (start < environ_text.size()) {
      const auto end = environ_text.find('\0', start);
      if (environ_text.compare(
              start, (end == std::string::npos ? environ_text.size() : end) - start, entry) == 0) {
        found.push_back(pid);
        break;
      }
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
  return found;
}

TEST(cli_autotune_leftovers, a_daemonizing_candidate_leaves_no_process_behind_and_is_flagged) {
  temp_dir dir;
  const std::string marker = "RPL_LEFTOVER_TEST=" + dir.path().filename().string();
  rpl::testing::write_file(dir / "space.json", R"({"params": {"MODE": [0], "SLEEP_US": [1000]}})");
  // Each run starts a daemon (setsid: out of the run's process group and session) that records its
  // pid, waits until it has, then runs the candidate. The marker finds any survivor afterwards.
  const std::string cmd_template = "sh -c 'export " + marker + "; F=" + dir.path().string() +
                                   "/daemon.$$; (setsid sh -c \"echo \\$\\$ > $F; exec sleep 300\" "
                                   "&); while [ ! -s $F ]; do sleep 0.01; done; exec {BIN}'";
  workers::child_options options;
  options.argv = {rpl::testing::rocm_perf.string(),
                  "autotune",
                  "--space",
                  (dir / "space.json").string(),
                  "--source",
                  fixture("candidate.cpp").string(),
                  "--build-template",
                  rpl::testing::fixture_build_template,
                  "--cmd-template",
                  cmd_template,
                  "--runs",
                  "2",
                  "--warmup",
                  "1",
                  "--timeout",
                  "20",
                  "--compile-workers",
                  "1",
                  "--db",
                  (dir / "r.db").string(),
                  "--json"};
  options.max_output_bytes = 16 << 20;
  // This test must see what rocm-perf leaves behind, so it does not clean up after it.
  options.reap_descendants = false;
  const auto out = workers::run_child(options, 5min);
  const auto survivors = processes_with(marker);
  for (const pid_t pid : survivors) {
    ::kill(pid, SIGKILL); // do not leave them to the next test
  }
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(survivors, std::vector<pid_t>{}) << "processes started by the candidate outlived it";

  std::vector<pid_t> daemons;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename().string().starts_with("daemon.")) {
      std::ifstream in(entry.path());
      long pid = 0;
      in >> pid;
      daemons.push_back(static_cast<pid_t>(pid));
    }
  }
  EXPECT_EQ(daemons.size(), 3u) << "one daemon per run: 1 warm-up and 2 timed runs";
  for (const pid_t pid : daemons) {
    EXPECT_FALSE(rpl::testing::process_alive(pid)) << "daemon " << pid << " survived";
  }

  const auto start = out.output.find("{\n");
  ASSERT_NE(start, std::string::npos) << out.output;
  const auto doc = nlohmann::json::parse(out.output.substr(start));
  EXPECT_EQ(rpl::testing::schema_errors(doc, "autotune.schema.json"), std::vector<std::string>{});
  ASSERT_EQ(doc["candidates"].size(), 1u);
  const auto& candidate = doc["candidates"][0];
  EXPECT_EQ(candidate["status"], "ok") << "the samples stand";
  EXPECT_EQ(candidate["leftover_processes"], 3) << candidate.dump();
  EXPECT_EQ(query_int(dir / "r.db", "SELECT leftover_processes FROM candidate_processes"), 3);
  // The warning names the candidate and the pids.
  const std::string key = candidate["key"];
  const auto warning = out.output.find("candidate " + key + ": its runs on lane");
  ASSERT_NE(warning, std::string::npos) << out.output;
  const std::string line = out.output.substr(warning, out.output.find('\n', warning) - warning);
  EXPECT_NE(line.find("left 3 processes running (pids "), std::string::npos) << line;
  for (const pid_t pid : daemons) {
    EXPECT_NE(line.find(std::to_string(pid)), std::string::npos) << line;
  }
}

TEST(cli_profile_leftovers, profile_kills_what_the_application_left_running_and_warns) {
  temp_dir dir;
  const std::string marker = "RPL_LEFTOVER_TEST=" + dir.path().filename().string();
  const std::string script = "export " + marker + "; F=" + dir.path().string() +
                             "/daemon; (setsid sh -c \"echo \\$\\$ > $F; exec sleep 300\" &); "
                             "while [ ! -s $F ]; do sleep 0.01; done";
  workers::child_options options;
  options.argv = {rpl::testing::rocm_perf.string(),
                  "profile",
                  "--no-rocprof",
                  "--runs",
                  "1",
                  "--",
                  "sh",
                  "-c",
                  script};
  options.max_output_bytes = 16 << 20;
  options.reap_descendants = false; // as above: this test must see what rocm-perf leaves
  const auto out = workers::run_child(options, 2min);
  const auto survivors = processes_with(marker);
  for (const pid_t pid : survivors) {
    ::kill(pid, SIGKILL);
  }
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(survivors, std::vector<pid_t>{}) << "the application's daemon outlived the profile";
  EXPECT_NE(out.output.find("run 1: the application left 1 process(es) running (pid "),
            std::string::npos)
      << out.output;
}

} // namespace
} // namespace rpl
