// A worker the engine refuses (issue 28, item 3): a plain worker at a `--curve-keys` listener
// never completes its handshake, so its send queue stays full. It used to retry the heartbeat at
// once, logging "send queue full; dropped heartbeat" some 211,000 times (14 MB) in 6 s at 40 % CPU.
// Now it tries once per heartbeat interval and logs the episode when it begins and when it ends.

#include <signal.h>
#include <sstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::free_port;
using rpl::testing::read_text;
using rpl::testing::temp_dir;
using rpl::testing::wait_until;

/// `argv` in the background with stderr to `log` (the shell execs it: the pid is its own).
workers::child_process start_logging(const std::filesystem::path& log,
                                     const std::vector<std::string>& argv) {
  workers::child_options options;
  options.argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$RPL_STDERR_LOG\""};
  options.argv.insert(options.argv.end(), argv.begin(), argv.end());
  options.environment = {{"RPL_STDERR_LOG", log.string()}};
  options.capture_output = false;
  return workers::child_process::spawn(options);
}

/// User plus system CPU time of a live process, from /proc/PID/stat.
std::chrono::milliseconds cpu_time(pid_t pid) {
  const auto stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long long ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) // utime, stime
      ticks += std::stoll(field);
  }
  return std::chrono::milliseconds(ticks * 1000 / ::sysconf(_SC_CLK_TCK));
}

std::size_t count_lines(const std::string& text, const std::string& needle = "") {
  std::size_t count = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos)
      ++count;
  }
  return count;
}

/// The log less its one-line-per-toolchain start-up report (long where nvcc and hipcc exist).
std::string without_toolchain_lines(const std::string& text) {
  std::string kept;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" toolchain ") == std::string::npos)
      kept += line + "\n";
  }
  return kept;
}

TEST(cli_worker_refused, a_refused_worker_logs_a_few_lines_and_does_not_spin) {
  temp_dir dir;
  for (const char* who : {"engine", "listed"}) {
    const auto out = rpl::testing::run_rocm_perf({"keys", "generate", (dir / who).string()});
    ASSERT_EQ(out.exit_code, 0) << out.output;
  }
  rpl::testing::write_file(dir / "allow", read_text(dir / "listed" / "public.key"));
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto args = rpl::testing::remote_sweep_args(dir / "r.db");
  args.insert(args.end(), {"--listen", endpoint, "--curve-keys", (dir / "engine").string(),
                           "--allow-keys", (dir / "allow").string(), "--worker-wait", "60"});
  args.insert(args.begin(), rpl::testing::rocm_perf.string());
  auto engine = start_logging(dir / "engine.log", args);
  ASSERT_TRUE(engine.launched());
  ASSERT_TRUE(wait_until(
      [&] { return read_text(dir / "engine.log").find("--connect") != std::string::npos; }, 30s))
      << read_text(dir / "engine.log");

  // A plain worker with the default heartbeat (1 s) and back-off, as in the issue.
  const auto worker_log = dir / "worker.log";
  std::vector<std::string> worker_argv = {
      rpl::testing::rocm_perf.string(), "worker", "compile", "--connect", endpoint, "--insecure"};
  if (!rpl::testing::sandbox_works())
    worker_argv.push_back("--no-sandbox");
  auto worker = start_logging(worker_log, worker_argv);
  ASSERT_TRUE(worker.launched());
  // Its start-up probes every toolchain on the host (seconds where nvcc and hipcc are installed),
  // so the clock starts when the queue is first full, not when the process does.
  const auto full = [&] {
    return read_text(worker_log).find("is full: the broker takes no messages") != std::string::npos;
  };
  const bool became_full = wait_until(full, 60s);
  const auto cpu_before = cpu_time(worker.pid());
  const auto since = std::chrono::steady_clock::now();
  // Liveness 3 x heartbeat 1 s: the reconnect that ends the first episode comes after about 3 s.
  const bool episode_ended =
      became_full &&
      wait_until(
          [&] {
            return read_text(worker_log).find("while the send queue was full") != std::string::npos;
          },
          30s);
  std::this_thread::sleep_until(since + 6s);
  const auto cpu = cpu_time(worker.pid()) - cpu_before;
  const auto log = read_text(worker_log);
  ::kill(worker.pid(), SIGTERM);
  EXPECT_EQ(worker.finish().exit_code, 0);
  ::kill(engine.pid(), SIGINT);
  engine.finish();

  // Its start (one line per toolchain found on this host aside), READY, the queue becoming full,
  // the reconnect after 3 s of silence with the count dropped, READY again, full again.
  const auto shown = without_toolchain_lines(log).substr(0, 4000);
  ASSERT_TRUE(became_full) << shown;
  EXPECT_TRUE(episode_ended) << shown;
  const auto lines = count_lines(log) - count_lines(log, " toolchain ");
  EXPECT_LE(lines, 12u) << shown;
  EXPECT_LE(log.size(), 16u << 10);
  EXPECT_GE(count_lines(log, "is full: the broker takes no messages"), 1u) << shown;
  EXPECT_LE(count_lines(log, "is full: the broker takes no messages"), 3u) << shown;
  // The busy loop took about 40 % of a core (2.4 s in 6 s); waiting takes next to nothing.
  EXPECT_LT(cpu, 600ms) << "the refused worker used " << cpu.count() << " ms of CPU in 6 s";
}

} // namespace
} // namespace rpl
