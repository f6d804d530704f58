// The compile sandbox (workers/compile/compile_sandbox.hpp) with real bwrap processes: what a
// compiler sees and may write. Skips (and says why) where bwrap cannot start a sandbox.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/compile/compile_sandbox.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::workers {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class compile_sandbox : public ::testing::Test {
protected:
  void SetUp() override {
    probe_ = probe_sandbox(dir_.path());
    if (!probe_.works())
      GTEST_SKIP() << probe_.why;
    job_ = dir_ / "rpl-job-1-1-abcdef";
    fs::create_directories(job_);
  }

  /// `sh -c script` in a sandbox whose job folder is job_ and work root dir_.
  child_outcome run(const std::string& script, const std::vector<fs::path>& hidden = {}) {
    child_options options;
    options.argv =
        sandbox_argv(probe_.bwrap, {.job_dir = job_, .work_root = dir_.path(), .hidden = hidden},
                     {"/bin/sh", "-c", script});
    return run_child(options, 20s);
  }

  rpl::testing::temp_dir dir_;
  fs::path job_;
  sandbox_probe probe_;
};

TEST_F(compile_sandbox, writes_only_in_the_job_folder) {
  const auto outcome = run("echo in > made.txt && pwd && ! touch /usr/rpl-sandbox-x 2>/dev/null"
                           " && touch /tmp/private && echo $TMPDIR");
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  EXPECT_EQ(rpl::testing::read_text(job_ / "made.txt"), "in\n");
  EXPECT_NE(outcome.output.find(job_.string() + "\n/tmp\n"), std::string::npos) << outcome.output;
  EXPECT_FALSE(fs::exists("/usr/rpl-sandbox-x"));
  // /tmp inside is a private tmpfs: the file is gone with the sandbox.
  EXPECT_FALSE(fs::exists("/tmp/private"));
}

TEST_F(compile_sandbox, hides_other_jobs_home_folders_and_the_workers_keys) {
  const auto other = dir_ / "rpl-job-1-2-other";
  fs::create_directories(other);
  rpl::testing::write_file(other / "theirs.cpp", "x");
  const auto keys = dir_ / "keys";
  fs::create_directories(keys);
  rpl::testing::write_file(keys / "secret.key", "SECRET");
  const auto outcome =
      run("ls -A " + other.string() + " " + keys.string() + " /root /home 2>&1; cat " +
              (keys / "secret.key").string() + " 2>&1; true",
          {keys});
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  EXPECT_EQ(outcome.output.find("theirs.cpp"), std::string::npos) << outcome.output;
  EXPECT_EQ(outcome.output.find("SECRET"), std::string::npos) << outcome.output;
}

TEST_F(compile_sandbox, has_no_network_but_loopback) {
  const auto outcome = run("cat /proc/net/dev");
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  EXPECT_NE(outcome.output.find("lo:"), std::string::npos) << outcome.output;
  std::size_t interfaces = 0;
  for (auto at = outcome.output.find(':'); at != std::string::npos;
       at = outcome.output.find(':', at + 1))
    ++interfaces;
  EXPECT_EQ(interfaces, 1u) << outcome.output;
}

TEST_F(compile_sandbox, reports_a_signal_as_128_plus_its_number) {
  // The worker turns this back into the signal (compile_worker.cpp, judge).
  const auto outcome = run("kill -SEGV $$");
  EXPECT_EQ(outcome.exit_code, 128 + SIGSEGV) << outcome.output;
}

} // namespace
} // namespace rpl::workers
