#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"
#include "workers/process/descendant_reaper.hpp"
#include "workers/tracers/timing/timing_recorder.hpp"

namespace rpl::workers {
namespace {

using namespace std::chrono_literals;
using rpl::testing::temp_dir;

/// A shell fragment that starts a daemon (a background job that calls setsid, so it leaves the
/// run's process group and session) which writes its pid to `pid_file` and runs `body`, then
/// waits until the pid is written: the run ends with the daemon alive.
std::string start_daemon(const std::filesystem::path& pid_file,
                         const std::string& body = "exec sleep 300") {
  const std::string file = pid_file.string();
  return "(setsid sh -c 'echo $$ > " + file + "; " + body + "' &); while [ ! -s " + file +
         " ]; do sleep 0.01; done";
}

child_options shell(const std::string& script) {
  child_options options;
  options.argv = {"sh", "-c", script};
  return options;
}

pid_t read_pid(const std::filesystem::path& file) {
  std::ifstream in(file);
  long pid = -1;
  in >> pid;
  return static_cast<pid_t>(pid);
}

/// No such process at all: not running, and no zombie left either.
bool reaped(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

char state_of(pid_t pid) {
  const auto stat = rpl::testing::read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close == std::string::npos || stat.size() <= close + 2 ? '?' : stat[close + 2];
}

TEST(workers_descendant_reaper, a_setsid_daemon_is_killed_reaped_and_listed) {
  temp_dir dir;
  const auto outcome = run_child(shell(start_daemon(dir / "daemon")), 10s);
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  const pid_t daemon = read_pid(dir / "daemon");
  ASSERT_GT(daemon, 1);
  EXPECT_EQ(outcome.leftovers, std::vector<pid_t>{daemon});
  EXPECT_TRUE(reaped(daemon)) << "daemon " << daemon << " outlived its run (state "
                              << state_of(daemon) << ")";
}

TEST(workers_descendant_reaper, a_daemon_is_found_by_a_scan_of_the_younger_processes_only) {
  // A full scan of /proc runs at most once a second; the runs in between read only the processes
  // younger than their own (pids above the leader's, unless the allocator wrapped). The first run
  // takes this second's full scan (or an earlier test did), the second is the partial one.
  const auto before = processes_created();
  ASSERT_TRUE(before.has_value());
  child_options trivial;
  trivial.argv = {"true"};
  ASSERT_TRUE(run_child(trivial, 10s).succeeded());
  const auto after = processes_created();
  ASSERT_TRUE(after.has_value());
  EXPECT_GT(*after, *before) << "the count of created processes did not grow with a spawn";
  temp_dir dir;
  const auto outcome = run_child(shell(start_daemon(dir / "daemon")), 10s);
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  const pid_t daemon = read_pid(dir / "daemon");
  ASSERT_GT(daemon, 1);
  EXPECT_EQ(outcome.leftovers, std::vector<pid_t>{daemon});
  EXPECT_TRUE(reaped(daemon)) << "daemon " << daemon << " outlived its run";
}

TEST(workers_descendant_reaper, a_daemon_is_found_beside_a_registered_child_that_lives_on) {
  // The reaper first reads this process's children: registered ones (a child_process, a compile
  // worker) do not make it search /proc, an orphan does. A long-lived registered sibling must
  // neither hide the daemon nor be taken for one of the run's.
  child_options sleeper;
  sleeper.argv = {"sleep", "30"};
  sleeper.reap_descendants = false;
  child_process sibling = child_process::spawn(sleeper);
  ASSERT_TRUE(sibling.launched());
  temp_dir dir;
  const auto outcome = run_child(shell(start_daemon(dir / "daemon")), 10s);
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  const pid_t daemon = read_pid(dir / "daemon");
  ASSERT_GT(daemon, 1);
  EXPECT_EQ(outcome.leftovers, std::vector<pid_t>{daemon});
  EXPECT_TRUE(reaped(daemon)) << "daemon " << daemon << " outlived its run";
  child_options trivial;
  trivial.argv = {"true"};
  const auto clean = run_child(trivial, 10s);
  ASSERT_TRUE(clean.succeeded());
  EXPECT_TRUE(clean.leftovers.empty())
      << "a run that left nothing was said to leave " << clean.leftovers.size();
  EXPECT_FALSE(sibling.try_reap()) << "the registered sibling was killed or reaped by another "
                                      "run's reaper";
  sibling.kill_group();
}

TEST(workers_descendant_reaper, a_double_forked_daemon_is_killed_and_reaped) {
  // The classic daemon: a session leader that forks the real daemon and exits, so the daemon's
  // parent and its session leader are both gone before the run ends.
  temp_dir dir;
  const std::string file = (dir / "daemon").string();
  const auto outcome = run_child(shell("(setsid sh -c 'sleep 300 & echo $! > " + file +
                                       "' &); while [ ! -s " + file + " ]; do sleep 0.01; done"),
                                 10s);
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  const pid_t daemon = read_pid(dir / "daemon");
  ASSERT_GT(daemon, 1);
  // The session leader may still have been on its way out: it is listed too, then.
  EXPECT_NE(std::find(outcome.leftovers.begin(), outcome.leftovers.end(), daemon),
            outcome.leftovers.end());
  for (const pid_t pid : outcome.leftovers) {
    EXPECT_TRUE(reaped(pid)) << pid;
  }
}

TEST(workers_descendant_reaper, a_daemon_that_ended_on_its_own_is_reaped_but_not_listed) {
  // It exits before the run does: a zombie reparented here, never running at the end.
  temp_dir dir;
  const std::string file = (dir / "daemon").string();
  const auto outcome =
      run_child(shell(start_daemon(file, "exit 0") + "; D=$(cat " + file +
                      "); while [ -e /proc/$D ] && [ \"$(cut -d' ' -f3 /proc/$D/stat)\" != Z ]; "
                      "do sleep 0.01; done"),
                10s);
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  const pid_t daemon = read_pid(file);
  ASSERT_GT(daemon, 1);
  EXPECT_TRUE(outcome.leftovers.empty());
  EXPECT_TRUE(reaped(daemon)) << "zombie " << daemon << " left behind (state " << state_of(daemon)
                              << ")";
}

TEST(workers_descendant_reaper, concurrent_runs_kill_only_their_own_leftovers) {
  // Run B (another lane's candidate) keeps its daemon while run A ends three times beside it.
  temp_dir dir;
  const std::string go = (dir / "go").string();
  child_outcome b;
  std::thread lane_b([&] {
    b = run_child(shell(start_daemon(dir / "b") + "; while [ ! -e " + go +
                        " ]; do sleep 0.01; done; kill -0 $(cat " + (dir / "b").string() +
                        ") && echo alive"),
                  60s);
  });
  ASSERT_TRUE(rpl::testing::wait_until([&] { return read_pid(dir / "b") > 1; }, 30s));
  const pid_t daemon_b = read_pid(dir / "b");
  for (int i = 0; i < 3; ++i) {
    const auto file = dir / ("a" + std::to_string(i));
    const auto a = run_child(shell(start_daemon(file)), 10s);
    EXPECT_TRUE(a.succeeded()) << a.output;
    EXPECT_EQ(a.leftovers, std::vector<pid_t>{read_pid(file)});
    // Alive: sleeping, or (under load) still running or in the kernel on its way into sleep.
    const char state = state_of(daemon_b);
    EXPECT_TRUE(state == 'S' || state == 'R' || state == 'D')
        << "run A's reaper touched run B's daemon (state " << state << ")";
  }
  rpl::testing::write_file(go, "");
  lane_b.join();
  EXPECT_TRUE(b.succeeded()) << b.output;
  EXPECT_EQ(b.output, "alive\n");
  EXPECT_EQ(b.leftovers, std::vector<pid_t>{daemon_b});
  EXPECT_TRUE(reaped(daemon_b));
}

TEST(workers_descendant_reaper, an_abandoned_run_is_killed_whole_by_its_thread_only) {
  // A lane that gives up on a run still going (a stop's grace period ran out) kills it with
  // kill_live_runs(its thread): its group and, once its leader is gone, its setsid daemon. A run
  // of another thread goes on.
  temp_dir dir;
  child_outcome abandoned;
  std::thread lane([&] {
    abandoned = run_child(shell(start_daemon(dir / "daemon") + "; exec sleep 300"), 60s);
  });
  child_outcome other;
  std::thread other_lane([&] { other = run_child(shell("exec sleep 300"), 3s); });
  ASSERT_TRUE(rpl::testing::wait_until([&] { return read_pid(dir / "daemon") > 1; }, 30s));
  const pid_t daemon = read_pid(dir / "daemon");
  const auto lane_id = lane.get_id();
  const auto killed = kill_live_runs(lane_id);
  EXPECT_EQ(killed, std::vector<pid_t>{daemon});
  EXPECT_TRUE(reaped(daemon)) << "daemon " << daemon << " outlived the abandon (state "
                              << state_of(daemon) << ")";
  lane.join();
  EXPECT_EQ(abandoned.term_signal, SIGKILL);
  EXPECT_FALSE(abandoned.timed_out);
  other_lane.join();
  EXPECT_TRUE(other.timed_out) << "another thread's run was killed before its timeout";
  EXPECT_TRUE(kill_live_runs(lane_id).empty()) << "a reaped run is still registered";
}

/// Forks `sleep 300` as the engine starts its own long-lived children: a compile worker stays in
/// the engine's process group (local_workers), the kernel lane process leads its own.
pid_t fork_sleeper(bool own_group) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (own_group)
      ::setpgid(0, 0);
    ::execlp("sleep", "sleep", "300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

TEST(workers_descendant_reaper, children_it_does_not_own_live_on_and_keep_their_exit_status) {
  temp_dir dir;
  const pid_t worker = fork_sleeper(false);
  const pid_t lane = fork_sleeper(true);
  ASSERT_GT(worker, 0);
  ASSERT_GT(lane, 0);
  // A child_process whose child has exited but that has not looked yet.
  child_process pending = child_process::spawn(shell("exit 5"));
  ASSERT_TRUE(pending.launched());

  const auto run = run_child(shell(start_daemon(dir / "d1")), 10s);
  EXPECT_EQ(run.leftovers.size(), 1u);
  EXPECT_NE(state_of(worker), 'Z');
  EXPECT_NE(state_of(worker), '?');
  EXPECT_NE(state_of(lane), 'Z');
  EXPECT_NE(state_of(lane), '?');

  // Dead but not waited for: another run's sweep for reparented zombies must leave them alone.
  ::kill(worker, SIGKILL);
  ::kill(lane, SIGKILL);
  ASSERT_TRUE(rpl::testing::wait_until(
      [&] {
        return state_of(worker) == 'Z' && state_of(lane) == 'Z' && state_of(pending.pid()) == 'Z';
      },
      10s));
  const auto again = run_child(shell(start_daemon(dir / "d2")), 10s);
  EXPECT_EQ(again.leftovers.size(), 1u);

  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, WNOHANG), worker) << "its exit status was taken";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_EQ(::waitpid(lane, &status, WNOHANG), lane) << "its exit status was taken";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(pending.finish().exit_code, 5);
}

TEST(workers_descendant_reaper, the_run_token_reaches_the_child_after_an_outer_one) {
  const std::string own = std::to_string(::getpid()) + ".";
  const auto alone = run_child(shell("echo $RPL_RUN_TOKEN"), 10s);
  ASSERT_TRUE(alone.succeeded());
  EXPECT_EQ(alone.output.rfind(own, 0), 0u) << alone.output;
  EXPECT_EQ(alone.output.find(':'), std::string::npos) << alone.output;

  ::setenv(run_token_variable, "77.1", 1); // as if a test harness had started this process
  const auto nested = run_child(shell("echo $RPL_RUN_TOKEN"), 10s);
  ::unsetenv(run_token_variable);
  ASSERT_TRUE(nested.succeeded());
  EXPECT_EQ(nested.output.rfind("77.1:" + own, 0), 0u) << nested.output;
}

TEST(workers_descendant_reaper, without_reap_descendants_a_daemon_survives_its_run) {
  temp_dir dir;
  auto options = shell(start_daemon(dir / "daemon"));
  options.reap_descendants = false;
  const auto outcome = run_child(options, 10s);
  ASSERT_TRUE(outcome.succeeded());
  const pid_t daemon = read_pid(dir / "daemon");
  ASSERT_GT(daemon, 1);
  EXPECT_TRUE(outcome.leftovers.empty());
  EXPECT_EQ(::kill(daemon, 0), 0) << "the group kill alone does not reach a daemon";
  ::kill(daemon, SIGKILL);
  int status = 0;
  ::waitpid(daemon, &status, 0); // ours only where an earlier test made this process subreaper
}

TEST(workers_descendant_reaper, a_recorder_reports_what_the_application_left_running) {
  temp_dir dir;
  timing_recorder recorder({10s, false});
  const auto run = recorder.record({"sh", "-c", start_daemon(dir / "daemon")}, dir / "t", 1);
  EXPECT_TRUE(run.recorded()) << run.reason;
  EXPECT_EQ(run.leftovers, std::vector<pid_t>{read_pid(dir / "daemon")});
  EXPECT_TRUE(reaped(read_pid(dir / "daemon")));
}

TEST(workers_descendant_reaper, describes_leftovers_for_a_log_line) {
  EXPECT_EQ(describe_leftovers({812}), "left 1 process running (pid 812)");
  EXPECT_EQ(describe_leftovers({812, 815}), "left 2 processes running (pids 812, 815)");
}

} // namespace
} // namespace rpl::workers
