#include <chrono>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <signal.h>
#include <string>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "workers/process/child_process.hpp"

namespace rpl::workers {
namespace {

using namespace std::chrono_literals;

child_options command(std::vector<std::string> argv) {
  child_options options;
  options.argv = std::move(argv);
  return options;
}

/// True when `pid` no longer exists (or is a zombie waiting for a reaper that is not us).
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0)
    return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (process_gone(pid))
      return true;
    std::this_thread::sleep_for(5ms);
  }
  return process_gone(pid);
}

TEST(workers_child_process, exit_code_zero) {
  const child_outcome outcome = run_child(command({"true"}), 5s);
  EXPECT_TRUE(outcome.launched);
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.term_signal, 0);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_TRUE(outcome.succeeded());
}

TEST(workers_child_process, nonzero_exit_code) {
  const child_outcome outcome = run_child(command({"sh", "-c", "exit 3"}), 5s);
  EXPECT_TRUE(outcome.launched);
  EXPECT_EQ(outcome.exit_code, 3);
  EXPECT_EQ(outcome.term_signal, 0);
  EXPECT_FALSE(outcome.succeeded());
}

TEST(workers_child_process, signal_is_reported) {
  const child_outcome outcome = run_child(command({"sh", "-c", "kill -SEGV $$"}), 5s);
  EXPECT_TRUE(outcome.launched);
  EXPECT_EQ(outcome.term_signal, SIGSEGV);
  EXPECT_EQ(outcome.exit_code, -1);
  EXPECT_FALSE(outcome.timed_out);
}

TEST(workers_child_process, exec_failure_names_the_program) {
  const child_outcome outcome = run_child(command({"rpl-no-such-program-xyz", "a"}), 5s);
  EXPECT_FALSE(outcome.launched);
  EXPECT_EQ(outcome.launch_error, "execvp rpl-no-such-program-xyz: No such file or directory");
  EXPECT_EQ(outcome.exit_code, -1);
}

TEST(workers_child_process, bad_cwd_is_a_launch_error) {
  child_options options = command({"true"});
  options.cwd = "/nonexistent/rpl-dir";
  const child_outcome outcome = run_child(options, 5s);
  EXPECT_FALSE(outcome.launched);
  EXPECT_NE(outcome.launch_error.find("chdir /nonexistent/rpl-dir"), std::string::npos)
      << outcome.launch_error;
}

TEST(workers_child_process, empty_argv_is_a_launch_error) {
  const child_outcome outcome = run_child(command({}), 5s);
  EXPECT_FALSE(outcome.launched);
  EXPECT_FALSE(outcome.launch_error.empty());
}

TEST(workers_child_process, cwd_is_applied) {
  const auto dir = std::filesystem::temp_directory_path();
  child_options options = command({"pwd"});
  options.cwd = dir;
  const child_outcome outcome = run_child(options, 5s);
  ASSERT_TRUE(outcome.succeeded());
  EXPECT_EQ(outcome.output, std::filesystem::canonical(dir).string() + "\n");
}

TEST(workers_child_process, captures_stdout_and_stderr) {
  const child_outcome outcome = run_child(command({"sh", "-c", "echo out; echo err >&2"}), 5s);
  ASSERT_TRUE(outcome.succeeded());
  EXPECT_EQ(outcome.output, "out\nerr\n");
  EXPECT_FALSE(outcome.output_truncated);
}

TEST(workers_child_process, no_capture_discards_output) {
  child_options options = command({"sh", "-c", "echo out; echo err >&2"});
  options.capture_output = false;
  child_process child = child_process::spawn(options);
  EXPECT_EQ(child.output_fd(), -1);
  const child_outcome outcome = child.finish();
  EXPECT_TRUE(outcome.succeeded());
  EXPECT_TRUE(outcome.output.empty());
}

TEST(workers_child_process, stdout_alone_when_stderr_is_not_captured) {
  child_options options = command({"sh", "-c", "echo err >&2; echo out; echo err2 >&2"});
  options.capture_stderr = false;
  const child_outcome outcome = run_child(options, 10s);
  ASSERT_TRUE(outcome.succeeded()) << outcome.launch_error;
  EXPECT_EQ(outcome.output, "out\n");
}

TEST(workers_child_process, truncates_but_keeps_draining) {
  // 1 MiB is far more than a pipe holds: the child only finishes if we keep reading.
  child_options options =
      command({"sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x; echo done >&2"});
  options.max_output_bytes = 100;
  const child_outcome outcome = run_child(options, 10s);
  ASSERT_TRUE(outcome.succeeded()) << outcome.launch_error;
  EXPECT_EQ(outcome.output, std::string(100, 'x'));
  EXPECT_TRUE(outcome.output_truncated);
}

TEST(workers_child_process, timeout_kills_grandchildren) {
  // The shell prints its background child's pid, then waits on a second sleep.
  child_options options = command({"sh", "-c", "sleep 100 & echo $!; sleep 100"});
  const auto started = std::chrono::steady_clock::now();
  const child_outcome outcome = run_child(options, 200ms);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(outcome.launched);
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_EQ(outcome.term_signal, SIGKILL);
  EXPECT_LT(elapsed, 2s);
  EXPECT_GE(outcome.wall, 200ms);
  const pid_t grandchild = static_cast<pid_t>(std::stol(outcome.output));
  ASSERT_GT(grandchild, 1);
  EXPECT_TRUE(gone_within(grandchild, 2s)) << "grandchild " << grandchild << " survived";
  EXPECT_TRUE(outcome.leftovers.empty()) << "the group was killed on purpose: not a leftover";
}

TEST(workers_child_process, background_grandchild_does_not_outlive_a_normal_exit) {
  // The leader exits at once, but its background child holds the pipe: the run must still end.
  const auto started = std::chrono::steady_clock::now();
  const child_outcome outcome = run_child(command({"sh", "-c", "sleep 100 & echo $!"}), 5s);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  ASSERT_TRUE(outcome.succeeded());
  const pid_t grandchild = static_cast<pid_t>(std::stol(outcome.output));
  EXPECT_TRUE(gone_within(grandchild, 2s));
  EXPECT_EQ(outcome.leftovers, std::vector<pid_t>{grandchild}) << "it was still running";
}

TEST(workers_child_process, wall_time_is_plausible) {
  const child_outcome outcome = run_child(command({"sleep", "0.2"}), 5s);
  ASSERT_TRUE(outcome.succeeded());
  EXPECT_GE(outcome.wall, 200ms);
  EXPECT_LT(outcome.wall, 1500ms);
}

TEST(workers_child_process, exit_is_seen_promptly) {
  // Engine overhead per candidate must stay small: `true` should be reaped within milliseconds.
  const child_outcome outcome = run_child(command({"true"}), 5s);
  ASSERT_TRUE(outcome.succeeded());
  EXPECT_LT(outcome.wall, 100ms);
}

TEST(workers_child_process, manual_poll_loop_with_exit_fd) {
  child_process child = child_process::spawn(command({"sh", "-c", "echo hi; exit 7"}));
  ASSERT_TRUE(child.launched());
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!child.try_reap() && std::chrono::steady_clock::now() < until) {
    pollfd fds[2] = {{child.output_fd(), POLLIN, 0}, {child.exit_fd(), POLLIN, 0}};
    ::poll(fds, 2, 100);
    child.drain_output();
  }
  ASSERT_TRUE(child.exited());
  const child_outcome outcome = child.finish();
  EXPECT_EQ(outcome.exit_code, 7);
  EXPECT_EQ(outcome.output, "hi\n");
}

TEST(workers_child_process, destructor_kills_the_group) {
  pid_t pid = -1;
  {
    child_process child = child_process::spawn(command({"sleep", "100"}));
    ASSERT_TRUE(child.launched());
    pid = child.pid();
  }
  EXPECT_TRUE(gone_within(pid, 1s));
}

TEST(workers_child_process, kill_group_then_finish) {
  child_process child = child_process::spawn(command({"sleep", "100"}));
  ASSERT_TRUE(child.launched());
  child.kill_group(SIGTERM);
  const child_outcome outcome = child.finish();
  EXPECT_EQ(outcome.term_signal, SIGTERM);
  EXPECT_FALSE(outcome.timed_out);
}

TEST(workers_child_process, describe_signal_names_it) {
  EXPECT_EQ(describe_signal(SIGSEGV), "SIGSEGV (Segmentation fault)");
  EXPECT_EQ(describe_signal(SIGKILL), "SIGKILL (Killed)");
  EXPECT_EQ(describe_signal(1000), "signal 1000");
}

TEST(workers_child_process, environment_changes_reach_only_the_child) {
  ::setenv("RPL_TEST_REMOVED", "present", 1);
  child_options options;
  options.argv = {"sh", "-c", "echo \"set=$RPL_TEST_SET removed=${RPL_TEST_REMOVED-unset}\""};
  options.environment = {{"RPL_TEST_SET", "yes"}, {"RPL_TEST_REMOVED", std::nullopt}};
  const auto outcome = run_child(options, std::chrono::seconds(10));
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  EXPECT_EQ(outcome.output, "set=yes removed=unset\n");
  EXPECT_EQ(std::getenv("RPL_TEST_SET"), nullptr);
  EXPECT_STREQ(std::getenv("RPL_TEST_REMOVED"), "present");
  ::unsetenv("RPL_TEST_REMOVED");
}

} // namespace
} // namespace rpl::workers
