// One process at a time per run (issue 28, item 5): a run holds an exclusive lease while it runs
// (engine/store/run_lease.hpp), so a second `--resume` of it is refused with exit 2 naming the pid
// and host that hold it, instead of measuring the same candidates again into the same run; a lease
// left by a process that died is taken over, with a log line. `optimize --out` has the same lease.

#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/store/run_lease.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::fixture;
using rpl::testing::free_port;
using rpl::testing::query_int;
using rpl::testing::query_texts;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;
using rpl::testing::wait_until;

/// `rocm-perf ARGS` in the background, its stderr in a file the test reads while it runs (the
/// shell execs rocm-perf, so the pid is rocm-perf's own).
class background_engine {
public:
  background_engine(const std::filesystem::path& log, const std::vector<std::string>& args)
      : log_(log) {
    workers::child_options options;
    options.argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$RPL_STDERR_LOG\"",
                    rpl::testing::rocm_perf.string()};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.environment = {{"RPL_STDERR_LOG", log_.string()}};
    options.capture_output = false;
    process_.emplace(workers::child_process::spawn(options));
  }
  pid_t pid() const { return process_->pid(); }
  std::string stderr_text() const { return rpl::testing::read_text(log_); }
  bool wait_for_stderr(const std::string& text, std::chrono::milliseconds timeout) const {
    return wait_until([&] { return stderr_text().find(text) != std::string::npos; }, timeout);
  }
  /// SIGINT, then the exit code (-1 when it did not exit within 20 s: then it is killed).
  int interrupt() {
    ::kill(process_->pid(), SIGINT);
    if (!wait_until([&] { return process_->try_reap(); }, 20s)) {
      process_->kill_group(SIGKILL);
      process_->finish();
      return -1;
    }
    return process_->finish().exit_code;
  }

private:
  std::filesystem::path log_;
  std::optional<workers::child_process> process_;
};

/// A sweep of the fixture space whose compiles wait for workers on --listen that never come:
/// the engine sits idle in its run until it is stopped.
std::vector<std::string> waiting_sweep(const std::filesystem::path& db) {
  auto args = rpl::testing::remote_sweep_args(db);
  args.insert(args.end(),
              {"--insecure", "--listen", "tcp://127.0.0.1:" + std::to_string(free_port()),
               "--worker-wait", "60"});
  return args;
}

/// The same sweep compiling on two local workers: it runs to the end.
std::vector<std::string> local_sweep(const std::filesystem::path& db) {
  auto args = rpl::testing::remote_sweep_args(db);
  *(std::find(args.begin(), args.end(), "--compile-workers") + 1) = "2";
  return args;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(cli_run_lease, a_second_resumer_exits_2_naming_the_pid_and_host_that_hold_the_run) {
  temp_dir dir;
  const auto db = dir / "r.db";
  {
    // The run, interrupted before anything compiled.
    background_engine first(dir / "first.log", waiting_sweep(db));
    ASSERT_TRUE(first.wait_for_stderr("rocm-perf worker compile --connect", 30s))
        << first.stderr_text();
    ASSERT_EQ(first.interrupt(), 130) << first.stderr_text();
  }
  const auto run_ids = query_texts(db, "SELECT run_id FROM runs");
  ASSERT_EQ(run_ids.size(), 1u);
  const auto lease_file = dir / ("r.db." + run_ids.front() + ".lease");
  EXPECT_FALSE(std::filesystem::exists(lease_file)) << "a run that ended left its lease";

  background_engine resumer(dir / "resumer.log", with(waiting_sweep(db), {"--resume"}));
  ASSERT_TRUE(resumer.wait_for_stderr("rocm-perf worker compile --connect", 30s))
      << resumer.stderr_text();
  EXPECT_TRUE(std::filesystem::exists(lease_file));

  const auto second = run_rocm_perf(with(waiting_sweep(db), {"--resume"}), 60s);
  EXPECT_EQ(second.exit_code, 2) << second.output;
  const std::string holder = "pid " + std::to_string(resumer.pid()) + " on host " +
                             engine::lease_host_name() + " (rocm-perf autotune --resume";
  EXPECT_NE(second.output.find("--resume: run " + run_ids.front() + " in " + db.string() +
                               " is in use by another process: it is held by " + holder),
            std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("fix: wait until that run ends, or stop it (kill -INT " +
                               std::to_string(resumer.pid()) + " on " + engine::lease_host_name()),
            std::string::npos)
      << second.output;
  // The refused one changed nothing: the holder goes on, and its run stays one run.
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(query_texts(db, "SELECT status FROM runs"), std::vector<std::string>{"running"});

  EXPECT_EQ(resumer.interrupt(), 130) << resumer.stderr_text();
  EXPECT_FALSE(std::filesystem::exists(lease_file));
}

TEST(cli_run_lease, a_stale_lease_of_a_dead_pid_is_taken_over_with_a_log_line) {
  temp_dir dir;
  const auto db = dir / "r.db";
  {
    background_engine first(dir / "first.log", waiting_sweep(db));
    ASSERT_TRUE(first.wait_for_stderr("rocm-perf worker compile --connect", 30s))
        << first.stderr_text();
    ASSERT_EQ(first.interrupt(), 130) << first.stderr_text();
  }
  const auto run_ids = query_texts(db, "SELECT run_id FROM runs");
  ASSERT_EQ(run_ids.size(), 1u);
  // What a resumer killed with SIGKILL leaves: a lease file that names it, and no lock.
  workers::child_options gone;
  gone.argv = {"true"};
  auto dead = workers::child_process::spawn(gone);
  const pid_t dead_pid = dead.pid();
  ASSERT_GT(dead_pid, 0);
  ASSERT_TRUE(dead.finish().succeeded()); // exited and reaped: no process has that pid now
  const auto lease_file = dir / ("r.db." + run_ids.front() + ".lease");
  rpl::testing::write_file(
      lease_file,
      engine::format_lease_holder({dead_pid, engine::lease_host_name(), "2026-11-27T01:43:00Z",
                                   "rocm-perf autotune --resume"}));

  const auto resumed = run_rocm_perf(with(local_sweep(db), {"--resume", "--json"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("taking over the lease " + lease_file.string() + ": pid " +
                                std::to_string(dead_pid) + " on host " + engine::lease_host_name() +
                                " (rocm-perf autotune --resume, since 2026-11-27T01:43:00Z) held "
                                "it and is no longer running"),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 4);
  EXPECT_FALSE(std::filesystem::exists(lease_file)) << "the finished run left its lease";
}

TEST(cli_run_lease, an_optimize_out_folder_in_use_is_bad_input_naming_its_holder) {
  temp_dir dir;
  const auto out = dir / "out";
  std::filesystem::create_directories(out);
  // This test process holds the folder's lease, as a running optimize would.
  auto lease = engine::run_lease::acquire(out / "optimize.lease", "rocm-perf optimize");
  const auto cuda = rpl::testing::source_dir / "examples" / "cuda";
  const auto result = run_rocm_perf(
      {"optimize", "--source", (cuda / "gemm.cu").string(), "--kernel", "rpl_sgemm_tiled",
       "--launch", (cuda / "gemm.launch.json").string(), "--build-template",
       "nvcc -cubin -arch=sm_90 gemm.cu -o {OUT}", "--out", out.string(), "--resume"});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(
                "--out " + out.string() + " is in use by another optimize run: it is held by pid " +
                std::to_string(::getpid()) + " on host " + engine::lease_host_name()),
            std::string::npos)
      << result.output;
  EXPECT_FALSE(std::filesystem::exists(out / "optimize.sqlite")) << "the refused run wrote there";
}

} // namespace
} // namespace rpl
