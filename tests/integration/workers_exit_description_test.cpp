#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "workers/process/child_process.hpp"
#include "workers/process/exit_description.hpp"

namespace rpl::workers {
namespace {

using namespace std::chrono_literals;

child_outcome ended(int exit_code, int term_signal = 0) {
  child_outcome outcome;
  outcome.launched = true;
  outcome.exit_code = exit_code;
  outcome.term_signal = term_signal;
  return outcome;
}

TEST(workers_exit_description, describes_each_way_a_child_ends) {
  EXPECT_EQ(describe_exit(ended(3)), "exited with status 3");
  EXPECT_EQ(describe_exit(ended(0)), "exited with status 0");
  EXPECT_EQ(describe_exit(ended(-1, SIGSEGV)), "was killed by SIGSEGV (Segmentation fault)");
  child_outcome missing;
  missing.launch_error = "execvp ./x: No such file or directory";
  EXPECT_EQ(describe_exit(missing), "could not be started: execvp ./x: No such file or directory");
}

TEST(workers_exit_description, a_timeout_wins_over_the_kill_it_caused) {
  child_outcome hung = ended(-1, SIGKILL);
  hung.timed_out = true;
  EXPECT_EQ(describe_exit(hung), "timed out");
  EXPECT_EQ(describe_exit(hung, 150ms), "timed out after 150 ms");
  EXPECT_EQ(describe_exit(hung, 1500ms), "timed out after 1.5 s");
  EXPECT_EQ(describe_exit(hung, 0ms), "timed out after 0 ms");
}

TEST(workers_exit_description, describes_real_children) {
  child_options options;
  options.argv = {"sh", "-c", "kill -TERM $$"};
  EXPECT_EQ(describe_exit(run_child(options, 5s)), "was killed by SIGTERM (Terminated)");
  options.argv = {"sh", "-c", "exit 7"};
  EXPECT_EQ(describe_exit(run_child(options, 5s)), "exited with status 7");
}

TEST(workers_exit_description, describes_raw_wait_statuses) {
  EXPECT_EQ(describe_wait_status(0), "exited with status 0");
  EXPECT_EQ(describe_wait_status(2 << 8), "exited with status 2"); // how waitpid encodes exit(2)
  EXPECT_EQ(describe_wait_status(SIGKILL), "was killed by SIGKILL (Killed)");
  EXPECT_EQ(describe_wait_status((SIGSTOP << 8) | 0x7f),
            "was stopped by SIGSTOP (Stopped (signal))");
}

TEST(workers_exit_description, names_signals) {
  EXPECT_EQ(describe_signal(SIGSEGV), "SIGSEGV (Segmentation fault)");
  EXPECT_EQ(describe_signal(77), "signal 77");
}

TEST(workers_exit_description, timeouts_read_in_ms_or_seconds) {
  EXPECT_EQ(describe_timeout(999ms), "999 ms");
  EXPECT_EQ(describe_timeout(1000ms), "1.0 s");
  EXPECT_EQ(describe_timeout(600000ms), "600.0 s");
}

} // namespace
} // namespace rpl::workers
