// Issue 28, item 1: listeners without keys are open to every local user. Each attack that
// succeeded on 11ceae2 now fails: a keyless tcp-loopback, ws, abstract ipc or shared-folder
// (umask 000) ipc --listen exits 2 before anything listens; the one keyless listener left, an ipc
// path in a private folder, is closed to another uid (probed with a plain socket connect as a
// user the test creates); an allow-list another user can write or owns exits 2.
#include <cstdlib>
#include <signal.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"

namespace rpl {
namespace {

using namespace std::chrono_literals;
using rpl::testing::free_port;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;

void expect_refused(const std::vector<std::string>& args,
                    const std::string& endpoint,
                    const std::filesystem::path& db) {
  const auto out = run_rocm_perf(args, 60s);
  EXPECT_EQ(out.exit_code, 2) << endpoint << "\n" << out.output;
  EXPECT_NE(out.output.find(endpoint), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("--curve-keys"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("--insecure"), std::string::npos) << out.output;
  EXPECT_FALSE(std::filesystem::exists(db)) << endpoint << ": nothing may start";
}

TEST(listen_policy, keyless_listeners_other_than_a_private_ipc_folder_are_bad_input) {
  temp_dir dir;
  const auto shared = dir / "shared";
  std::filesystem::create_directories(shared);
  ::chmod(shared.c_str(), 0777); // what a socket folder made under umask 000 looks like
  const std::vector<std::string> endpoints = {"tcp://127.0.0.1:" + std::to_string(free_port()),
                                              "tcp://0.0.0.0:" + std::to_string(free_port()),
                                              "ws://127.0.0.1:" + std::to_string(free_port()),
                                              "ipc://@rpl-listen-" + std::to_string(::getpid()),
                                              "ipc://" + (shared / "l.ipc").string(),
                                              "ipc://relative.ipc",
                                              "udp://127.0.0.1:" + std::to_string(free_port())};
  for (const auto& endpoint : endpoints) {
    auto args = rpl::testing::remote_sweep_args(dir / "r.db");
    args.insert(args.end(), {"--listen", endpoint});
    expect_refused(args, endpoint, dir / "r.db");
  }
}

TEST(listen_policy, a_private_ipc_listener_runs_a_sweep_without_keys) {
  temp_dir dir;
  const auto folder = dir / "sockets"; // missing: the engine makes it, mode 0700
  const std::string endpoint = "ipc://" + (folder / "l.ipc").string();
  auto args = rpl::testing::remote_sweep_args(dir / "r.db");
  args.insert(args.begin(), rpl::testing::rocm_perf.string());
  args.insert(args.end(), {"--listen", endpoint});
  workers::child_options engine_options;
  engine_options.argv = args;
  auto engine = workers::child_process::spawn(engine_options);
  ASSERT_TRUE(engine.launched());
  ASSERT_TRUE(
      rpl::testing::wait_until([&] { return std::filesystem::exists(folder / "l.ipc"); }, 20s));
  struct stat info {};
  ASSERT_EQ(::stat(folder.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700U);
  workers::child_options worker_options;
  worker_options.argv = rpl::testing::remote_worker_argv(endpoint, {});
  worker_options.capture_output = false;
  auto worker = workers::child_process::spawn(worker_options);
  ASSERT_TRUE(worker.launched());
  const auto outcome = engine.finish();
  EXPECT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(
      rpl::testing::query_int(dir / "r.db", "SELECT COUNT(*) FROM candidates WHERE status='ok'"),
      4);
  ::kill(worker.pid(), SIGTERM);
  worker.finish();
}

/// A user of this host other than the test's, made for it (root only); empty with `why` set
/// when none can be made.
class probe_user {
public:
  probe_user() {
    if (::geteuid() != 0) {
      why_ = "making a second user needs root";
      return;
    }
    if (std::system("command -v useradd >/dev/null && command -v runuser >/dev/null && "
                    "command -v python3 >/dev/null") != 0) {
      why_ = "useradd, runuser or python3 is missing";
      return;
    }
    name_ = "rplprobe" + std::to_string(::getpid() % 100000);
    if (std::system(("useradd -M -s /usr/sbin/nologin " + name_ + " 2>/dev/null").c_str()) != 0) {
      why_ = "useradd " + name_ + " failed (no writable /etc/passwd?)";
      name_.clear();
    }
  }
  ~probe_user() {
    if (!name_.empty()) {
      std::system(("userdel " + name_ + " 2>/dev/null").c_str());
    }
  }
  const std::string& name() const { return name_; }
  const std::string& why() const { return why_; }
  uid_t uid() const {
    workers::child_options options;
    options.argv = {"id", "-u", name_};
    const auto out = workers::run_child(options, 10s);
    return static_cast<uid_t>(std::stoul(out.output));
  }

private:
  std::string name_, why_;
};

/// What a plain Unix-socket connect to `path` gives as `user` ("ok" or the error's name).
std::string connect_as(const std::string& user, const std::filesystem::path& path) {
  workers::child_options options;
  options.argv = {"runuser",
                  "-u",
                  user,
                  "--",
                  "python3",
                  "-c",
                  "import socket,sys\n"
                  "s=socket.socket(socket.AF_UNIX)\n"
                  "try:\n s.connect(sys.argv[1]); print('ok')\n"
                  "except OSError as e: print(type(e).__name__)\n",
                  path.string()};
  const auto out = workers::run_child(options, 30s);
  return out.output.substr(0, out.output.find('\n'));
}

TEST(listen_policy, another_user_cannot_reach_the_private_ipc_listener) {
  probe_user other;
  if (other.name().empty()) {
    GTEST_SKIP() << "no second user to attack with: " << other.why();
  }
  temp_dir dir;
  ::chmod(dir.path().c_str(), 0755); // the attacker may walk up to the socket's folder
  const auto folder = dir / "sockets";
  const std::string endpoint = "ipc://" + (folder / "l.ipc").string();
  auto args = rpl::testing::remote_sweep_args(dir / "r.db");
  args.insert(args.begin(), rpl::testing::rocm_perf.string());
  args.insert(args.end(), {"--listen", endpoint, "--worker-wait", "30"});
  workers::child_options engine_options;
  engine_options.argv = args;
  auto engine = workers::child_process::spawn(engine_options);
  ASSERT_TRUE(engine.launched());
  ASSERT_TRUE(
      rpl::testing::wait_until([&] { return std::filesystem::exists(folder / "l.ipc"); }, 20s));
  EXPECT_EQ(connect_as("root", folder / "l.ipc"), "ok") << "the owner reaches it";
  EXPECT_EQ(connect_as(other.name(), folder / "l.ipc"), "PermissionError");
  ::kill(engine.pid(), SIGINT);
  engine.finish();
}

TEST(listen_policy, a_worker_without_the_engines_key_connects_only_to_a_private_ipc_socket) {
  // The worker's side of the same rule: an engine it cannot authenticate could send it jobs.
  temp_dir dir;
  for (const std::string& endpoint :
       {"tcp://127.0.0.1:" + std::to_string(free_port()), std::string("ipc://@rpl-engine"),
        "ws://127.0.0.1:" + std::to_string(free_port())}) {
    for (const char* kind : {"compile", "propose"}) {
      std::vector<std::string> args = {"worker", kind, "--connect", endpoint};
      if (std::string(kind) == "propose") {
        args.insert(args.end(), {"--kind", "rule"});
      }
      const auto out = run_rocm_perf(args, 30s);
      EXPECT_EQ(out.exit_code, 2) << kind << " " << endpoint << "\n" << out.output;
      EXPECT_NE(out.output.find("--server-key"), std::string::npos) << out.output;
      EXPECT_NE(out.output.find("--insecure"), std::string::npos) << out.output;
    }
  }
  // A private folder's socket needs no key: the worker starts and waits for its engine.
  const std::string endpoint = "ipc://" + (dir / "e.ipc").string();
  workers::child_options options;
  options.argv = rpl::testing::remote_worker_argv(endpoint, {});
  auto worker = workers::child_process::spawn(options);
  ASSERT_TRUE(worker.launched());
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(rpl::testing::process_alive(worker.pid()));
  ::kill(worker.pid(), SIGTERM);
  worker.finish();
}

TEST(listen_policy, an_allow_list_another_user_can_change_is_bad_input) {
  temp_dir dir;
  ASSERT_EQ(run_rocm_perf({"keys", "generate", (dir / "engine").string()}).exit_code, 0);
  ASSERT_EQ(run_rocm_perf({"keys", "generate", (dir / "worker").string()}).exit_code, 0);
  const auto key = rpl::testing::read_text(dir / "worker" / "public.key").substr(0, 40);
  const auto allow = dir / "lists" / "allow";
  std::filesystem::create_directories(allow.parent_path());
  rpl::testing::write_file(allow, key + " w1\n");
  const auto run = [&] {
    auto args = rpl::testing::remote_sweep_args(dir / "r.db");
    args.insert(args.end(),
                {"--listen", "tcp://127.0.0.1:" + std::to_string(free_port()), "--curve-keys",
                 (dir / "engine").string(), "--allow-keys", allow.string()});
    return run_rocm_perf(args, 60s);
  };
  ::chmod(allow.c_str(), 0666); // the file of the probe: another user added a key to it
  auto out = run();
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("writable by group or others"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("chmod go-w " + allow.string()), std::string::npos) << out.output;
  ::chmod(allow.c_str(), 0644);
  ::chmod(allow.parent_path().c_str(), 0777); // others could replace the file
  out = run();
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("could replace"), std::string::npos) << out.output;
  ::chmod(allow.parent_path().c_str(), 0755);
  probe_user other;
  if (other.name().empty()) {
    GTEST_SKIP() << "no second user to own the allow-list: " << other.why();
  }
  ASSERT_EQ(::chown(allow.c_str(), other.uid(), static_cast<gid_t>(-1)), 0);
  out = run();
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("belongs to uid"), std::string::npos) << out.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "r.db"));
}

} // namespace
} // namespace rpl
