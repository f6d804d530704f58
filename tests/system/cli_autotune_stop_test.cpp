// Stopping `rocm-perf autotune` (issue 10): one SIGINT or SIGTERM ends a run within the grace
// period even when it waits for compile workers that never come, stores what completed, marks the
// run interrupted and exits 130; a second signal exits at once; --worker-wait bounds the wait. A
// measurement abandoned after the grace period leaves nothing running, a setsid daemon included.

#include <signal.h>
#include <sys/socket.h>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>

#include "support/test_support.hpp"
#include "workers/process/descendant_reaper.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::fixture;
using rpl::testing::free_port;
using rpl::testing::query_int;
using rpl::testing::query_texts;
using rpl::testing::temp_dir;
using rpl::testing::wait_until;

/// `rocm-perf autotune` as a child process whose stderr goes to a file the test reads while it
/// runs (the shell execs rocm-perf, so the pid signalled is rocm-perf's own).
class engine_process {
public:
  engine_process(const temp_dir& dir, const std::vector<std::string>& args)
      : log_(dir / "stderr.log") {
    workers::child_options options;
    options.argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$RPL_STDERR_LOG\"",
                    rpl::testing::rocm_perf.string()};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.environment = {{"RPL_STDERR_LOG", log_.string()}};
    options.capture_output = false;
    process_.emplace(workers::child_process::spawn(options));
  }

  bool launched() const { return process_->launched(); }
  pid_t pid() const { return process_->pid(); }
  std::string stderr_text() const { return rpl::testing::read_text(log_); }
  /// True once stderr contains `text`, polled until the timeout.
  bool wait_for_stderr(const std::string& text, std::chrono::milliseconds timeout) const {
    return wait_until([&] { return stderr_text().find(text) != std::string::npos; }, timeout);
  }
  void signal(int sig) { ::kill(process_->pid(), sig); }
  /// Waits up to `timeout` for the exit; nullopt (and the process killed) when it did not come.
  std::optional<workers::child_outcome> wait_for_exit(std::chrono::milliseconds timeout) {
    if (!wait_until([&] { return process_->try_reap(); }, timeout)) {
      process_->kill_group(SIGKILL);
      process_->finish();
      return std::nullopt;
    }
    return process_->finish();
  }

private:
  std::filesystem::path log_;
  std::optional<workers::child_process> process_;
};

std::vector<std::string> one_worker_autotune_args(const std::filesystem::path& space,
                                                  const std::filesystem::path& db) {
  return {"autotune",
          "--space",
          space.string(),
          "--source",
          fixture("candidate.cpp").string(),
          "--build-template",
          rpl::testing::fixture_build_template,
          "--cmd-template",
          "{BIN}",
          "--runs",
          "3",
          "--warmup",
          "1",
          "--timeout",
          "1",
          "--heartbeat-ms",
          "100",
          "--db",
          db.string()};
}

/// A run whose compiles go to --listen, with no local worker: nothing ever compiles.
std::vector<std::string> waiting_args(const std::filesystem::path& db,
                                      const std::string& endpoint) {
  auto args = one_worker_autotune_args(fixture("space-ok.json"), db);
  args.insert(args.end(), {"--compile-workers", "0", "--insecure", "--listen", endpoint});
  return args;
}

std::string run_status(const std::filesystem::path& db) {
  const auto rows = query_texts(db, "SELECT status FROM runs");
  return rows.size() == 1 ? rows.front() : "(" + std::to_string(rows.size()) + " runs)";
}

/// Sends `sig` to an engine that waits for workers that never come; it must end within 10 s, with
/// 130, the run stored as interrupted and nothing stored for the candidates that never compiled.
void expect_stopped_by(int sig, engine_process& engine, const std::filesystem::path& db) {
  const auto sent = std::chrono::steady_clock::now();
  engine.signal(sig);
  const auto outcome = engine.wait_for_exit(10s);
  ASSERT_TRUE(outcome) << "still running 10 s after the signal; stderr:\n" << engine.stderr_text();
  const auto took = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(outcome->term_signal, 0);
  EXPECT_EQ(outcome->exit_code, 130) << engine.stderr_text();
  EXPECT_LT(took, 10s);
  EXPECT_EQ(run_status(db), "interrupted");
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates"), 0);
  const auto err = engine.stderr_text();
  EXPECT_NE(err.find("interrupted; continue with --resume --db " + db.string()), std::string::npos)
      << err;
}

TEST(cli_autotune_stop, sigint_ends_a_run_waiting_for_workers_and_resume_finishes_it) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  const auto args = waiting_args(db, endpoint);
  engine_process engine(dir, args);
  ASSERT_TRUE(engine.launched());
  // It says at once where it waits and how to start a worker.
  ASSERT_TRUE(engine.wait_for_stderr("rocm-perf worker compile --connect " + endpoint, 30s))
      << engine.stderr_text();
  std::this_thread::sleep_for(500ms); // the candidates are queued by now
  expect_stopped_by(SIGINT, engine, db);

  // The compiles that never ran were not stored: a resumed run with local workers makes them all.
  auto resume = one_worker_autotune_args(fixture("space-ok.json"), db);
  resume.insert(resume.end(), {"--compile-workers", "2", "--resume", "--json"});
  const auto resumed = rpl::testing::run_rocm_perf(resume);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto doc = nlohmann::json::parse(resumed.output.substr(resumed.output.find("{\n")));
  EXPECT_EQ(doc["counts"]["resumed"], 0);
  EXPECT_EQ(doc["counts"]["completed"], 4);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(run_status(db), "finished");
}

TEST(cli_autotune_stop, sigterm_ends_a_run_that_said_it_waits_for_a_worker) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  engine_process engine(dir, waiting_args(db, endpoint));
  ASSERT_TRUE(engine.launched());
  // After 5 s without a worker it says so: the endpoint, how long, how many wait, and the fix.
  ASSERT_TRUE(
      engine.wait_for_stderr("waiting for a compile worker on " + endpoint + " for 5 s", 30s))
      << engine.stderr_text();
  const auto err = engine.stderr_text();
  EXPECT_NE(err.find("(no compile worker connected; queued: 4)"), std::string::npos) << err;
  EXPECT_NE(err.find("start one with: rocm-perf worker compile --connect " + endpoint),
            std::string::npos)
      << err;
  expect_stopped_by(SIGTERM, engine, db);
}

TEST(cli_autotune_stop, worker_wait_fails_the_run_naming_the_endpoint_and_the_fix) {
  temp_dir dir;
  const auto db = dir / "r.db";
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto args = waiting_args(db, endpoint);
  args.insert(args.end(), {"--worker-wait", "1"});
  const auto started = std::chrono::steady_clock::now();
  const auto out = rpl::testing::run_rocm_perf(args, 60s);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
  EXPECT_EQ(out.exit_code, 1) << out.output;
  EXPECT_NE(out.output.find("no compile worker that fits the compiles connected to " + endpoint +
                            " within --worker-wait 1 s (no compile worker connected;"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("fix: start one with: rocm-perf worker compile --connect " + endpoint),
            std::string::npos)
      << out.output;
  EXPECT_EQ(run_status(db), "failed");
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM candidates"), 0);
}

TEST(cli_autotune_stop, a_worker_wait_that_is_not_positive_is_bad_input) {
  temp_dir dir;
  const auto db = dir / "r.db";
  auto args = waiting_args(db, "tcp://127.0.0.1:" + std::to_string(free_port()));
  args.insert(args.end(), {"--worker-wait", "-1"});
  const auto out = rpl::testing::run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--worker-wait -1"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("fix:"), std::string::npos) << out.output;
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM runs"), 0);
}

/// A run measuring a candidate that hangs (MODE 2) for up to a minute per run.
class cli_autotune_stop_measuring : public ::testing::Test {
protected:
  void SetUp() override {
    rpl::testing::write_file(dir_ / "space.json", R"({"params": {"MODE": [2], "SLEEP_US": [1]}})");
    auto args = one_worker_autotune_args(dir_ / "space.json", db_);
    *(std::find(args.begin(), args.end(), "--timeout") + 1) = "60";
    args.insert(args.end(), {"--compile-workers", "1"});
    engine_.emplace(dir_, args);
    ASSERT_TRUE(engine_->launched());
    // The lane runs the candidate's artifact (it lives in <db>.artifacts/).
    ASSERT_TRUE(wait_until(
        [&] { return !rpl::testing::children_of(engine_->pid(), ".artifacts/").empty(); }, 60s))
        << engine_->stderr_text();
    candidate_ = rpl::testing::children_of(engine_->pid(), ".artifacts/").front();
  }
  temp_dir dir_;
  std::filesystem::path db_ = dir_ / "r.db";
  std::optional<engine_process> engine_;
  pid_t candidate_ = -1;
};

TEST_F(cli_autotune_stop_measuring, is_abandoned_after_the_grace_period_and_not_stored) {
  const auto sent = std::chrono::steady_clock::now();
  engine_->signal(SIGINT);
  const auto outcome = engine_->wait_for_exit(20s);
  ASSERT_TRUE(outcome) << engine_->stderr_text();
  const auto took = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(outcome->exit_code, 130) << engine_->stderr_text();
  EXPECT_GE(took, 9s) << "the measurement in flight gets its grace period";
  EXPECT_LT(took, 15s);
  const auto err = engine_->stderr_text();
  EXPECT_NE(err.find("abandoned 1 measurement still running after the 10 s grace period"),
            std::string::npos)
      << err;
  EXPECT_EQ(run_status(db_), "interrupted");
  EXPECT_EQ(query_int(db_, "SELECT COUNT(*) FROM candidates"), 0);
  // The abandoned measurement's process does not outlive the engine.
  EXPECT_TRUE(wait_until([&] { return !rpl::testing::process_alive(candidate_); }, 5s));
}

TEST_F(cli_autotune_stop_measuring, a_second_signal_exits_at_once_with_130) {
  engine_->signal(SIGINT);
  ASSERT_TRUE(engine_->wait_for_stderr("a second Ctrl-C or SIGTERM exits at once", 5s))
      << engine_->stderr_text();
  const auto sent = std::chrono::steady_clock::now();
  engine_->signal(SIGTERM);
  const auto outcome = engine_->wait_for_exit(5s);
  ASSERT_TRUE(outcome) << engine_->stderr_text();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 3s);
  EXPECT_EQ(outcome->term_signal, 0);
  EXPECT_EQ(outcome->exit_code, 130) << engine_->stderr_text();
  EXPECT_TRUE(wait_until([&] { return !rpl::testing::process_alive(candidate_); }, 5s));
}

TEST(cli_autotune_stop, sigterm_leaves_no_daemon_of_the_abandoned_measurement) {
  // Issue 28, item 4: a candidate whose run starts a setsid daemon, then runs for 30 s. A normal
  // run's end kills such a daemon; so must the abandon after the grace period: without it, the
  // daemon outlived the engine (reparented to the nearest subreaper: init, or this test).
  temp_dir dir;
  const auto pid_file = dir / "daemon.pid";
  rpl::testing::write_file(dir / "space.json", R"({"params": {"MODE": [0], "SLEEP_US": [1]}})");
  rpl::testing::write_file(dir / "run.sh", "(setsid sh -c 'echo $$ > " + pid_file.string() +
                                               "; exec sleep 300' &)\nexec sleep 30\n");
  const auto db = dir / "r.db";
  auto args = one_worker_autotune_args(dir / "space.json", db);
  *(std::find(args.begin(), args.end(), "--timeout") + 1) = "60";
  *(std::find(args.begin(), args.end(), "--cmd-template") + 1) =
      "sh " + (dir / "run.sh").string() + " {BIN}";
  args.insert(args.end(), {"--compile-workers", "1"});
  engine_process engine(dir, args);
  ASSERT_TRUE(engine.launched());
  ASSERT_TRUE(wait_until([&] { return !rpl::testing::read_text(pid_file).empty(); }, 60s))
      << engine.stderr_text();
  const pid_t daemon = std::stoi(rpl::testing::read_text(pid_file));
  ASSERT_TRUE(rpl::testing::process_alive(daemon));

  engine.signal(SIGTERM);
  const auto outcome = engine.wait_for_exit(25s);
  ASSERT_TRUE(outcome) << engine.stderr_text();
  EXPECT_EQ(outcome->exit_code, 130) << engine.stderr_text();
  const auto err = engine.stderr_text();
  EXPECT_NE(err.find("abandoned 1 measurement still running after the 10 s grace period"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("killed the measurement still running, which left 1 process running (pid " +
                     std::to_string(daemon) + ") outside its process group"),
            std::string::npos)
      << err;
  // This test's own reaper found nothing of the engine's run left when it reaped the engine: the
  // engine had killed the daemon itself.
  EXPECT_TRUE(outcome->leftovers.empty())
      << "the daemon outlived the engine: " << workers::describe_leftovers(outcome->leftovers);
  EXPECT_FALSE(rpl::testing::process_alive(daemon));
  EXPECT_EQ(run_status(db), "interrupted");
}

} // namespace
} // namespace rpl
