#include "engine/broker/local_workers.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <signal.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <sched.h>
#include <spdlog/spdlog.h>

#include "workers/compile/compile_sandbox.hpp"
#include "workers/compile/compile_worker.hpp"
#include "workers/process/descendant_reaper.hpp"
#include "workers/process/exit_description.hpp"

namespace rpl::engine {

namespace {

/// Whether this host can sandbox compilers; probed once per engine, which warns once if not.
bool sandbox_works() {
  static const bool works = [] {
    const char* tmp = std::getenv("TMPDIR");
    const auto probe =
        workers::probe_sandbox(tmp != nullptr && *tmp != '\0' ? tmp : std::string("/tmp"));
    if (!probe.works())
      spdlog::warn("local compile workers run their compilers without a sandbox: {}", probe.why);
    return probe.works();
  }();
  return works;
}

} // namespace

std::vector<std::string> with_compiler_paths(std::vector<std::string> allowed,
                                             const std::vector<std::string>& paths) {
  if (paths.empty())
    return allowed;
  if (allowed.empty())
    allowed = workers::compile_worker_options{}.allowed_compilers;
  for (const auto& path : paths)
    if (std::find(allowed.begin(), allowed.end(), path) == allowed.end())
      allowed.push_back(path);
  return allowed;
}

local_workers::local_workers(local_workers_config config) : config_(std::move(config)) {
  if (config_.max_restarts == 0) {
    config_.max_restarts = 2 * config_.count;
  }
}

local_workers::~local_workers() {
  stop();
}

pid_t local_workers::spawn_one() {
  std::vector<std::string> args = {config_.executable.string()};
  args.insert(args.end(), config_.command.begin(), config_.command.end());
  const bool compile = config_.command == std::vector<std::string>{"worker", "compile"};
  for (const std::string& arg :
       {std::string("--connect"), config_.endpoint, std::string("--heartbeat-ms"),
        std::to_string(config_.heartbeat.count()), std::string("--liveness"),
        std::to_string(config_.liveness), std::string("--quiet")}) {
    args.push_back(arg);
  }
  if (compile) {
    // the engine starts as many local workers as it wants jobs
    args.push_back("--slots");
    args.push_back("1");
    for (const auto& compiler : config_.allowed_compilers) {
      args.push_back("--allow-compiler");
      args.push_back(compiler);
    }
    for (const auto& path : config_.allowed_paths) {
      // The worker refuses a path that does not exist; a template may name one harmlessly.
      std::error_code error;
      if (!std::filesystem::exists(path, error))
        continue;
      args.push_back("--allow-path");
      args.push_back(path);
    }
    if (!sandbox_works())
      args.push_back("--no-sandbox");
  }
  std::vector<char*> argv;
  for (auto& arg : args) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  // Registered as a child that its owner waits for, so the run reaper neither reaps it nor takes
  // it for a run's orphan (held across fork: the child only execs).
  const auto registry = workers::lock_direct_children();
  const pid_t pid = fork();
  if (pid < 0) {
    throw std::runtime_error("cannot start a local compile worker: fork failed");
  }
  if (pid == 0) {
    // SIGTERM (not SIGKILL) so the worker can kill its compiler's process group on the way out.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (!config_.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int cpu : config_.cpus) {
        CPU_SET(cpu, &set);
      }
      sched_setaffinity(0, sizeof set, &set);
    }
    if (getppid() != parent) {
      _exit(0);
    }
    for (const auto& [name, value] : config_.environment) {
      setenv(name.c_str(), value.c_str(), 1);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  workers::add_direct_child(pid, registry);
  return pid;
}

void local_workers::start() {
  for (std::size_t i = 0; i < config_.count; ++i) {
    pids_.push_back(spawn_one());
  }
}

void local_workers::supervise() {
  for (auto& pid : pids_) {
    if (pid <= 0) {
      continue;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) != pid) {
      continue;
    }
    workers::remove_direct_child(pid);
    const std::string how = workers::describe_wait_status(status);
    if (restarts_ >= config_.max_restarts) {
      spdlog::error("local compile worker {} {}; restart budget ({}) spent", pid, how,
                    config_.max_restarts);
      pid = -1;
      continue;
    }
    ++restarts_;
    const pid_t replacement = spawn_one();
    spdlog::warn("local compile worker {} {}; started {} in its place", pid, how, replacement);
    pid = replacement;
  }
}

bool local_workers::exhausted() const {
  return !pids_.empty() &&
         std::all_of(pids_.begin(), pids_.end(), [](pid_t pid) { return pid <= 0; });
}

void local_workers::stop(std::chrono::milliseconds grace) {
  for (pid_t pid : pids_) {
    if (pid > 0) {
      kill(pid, SIGTERM);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (pid_t& pid : pids_) {
    while (pid > 0) {
      int status = 0;
      const pid_t got = waitpid(pid, &status, WNOHANG);
      if (got == pid || got < 0) {
        workers::remove_direct_child(pid);
        pid = -1;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        workers::remove_direct_child(pid);
        pid = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  pids_.clear();
}

} // namespace rpl::engine
