// `rocm-perf workers slurm --nodes N --connect ENDPOINT [...] [-- SRUN_OPTIONS...]`: compile
// workers under the cluster's scheduler. One `srun` step with one task per node, each task a
// `rocm-perf worker compile --once` that leaves when the sweep's engine finishes, so the step (and
// this command) ends with the sweep. stdout and stderr are srun's (the workers' logs, one line
// prefix per task with --label). SIGINT/SIGTERM are passed to srun as SIGTERM, which stops the
// workers.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "engine/commands/command.hpp"
#include "workers/protocol/endpoint_policy.hpp"

extern char** environ;

namespace rpl::engine::commands {

namespace {

/// This executable's path, so every node runs the same build (a shared file system, or the
/// bundle installed at the same path).
std::string self_path() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("rocm-perf") : self.string();
}

class workers_command final : public command {
public:
  void add_to(CLI::App& app) override {
    auto* workers = app.add_subcommand("workers", "Start compile workers under a scheduler");
    workers->require_subcommand(1);
    slurm_ = workers->add_subcommand(
        "slurm", "One compile worker per node through srun; they leave when the sweep ends");
    slurm_->add_option("--nodes", nodes_, "Nodes (one worker each)")
        ->required()
        ->check(CLI::Range(1, 100000));
    slurm_->add_option("--connect", endpoint_, "The engine's --listen endpoint, as nodes reach it")
        ->required();
    slurm_->add_option("--curve-keys", curve_keys_,
                       "The workers' CURVE key pair folder, readable at this path on every node");
    slurm_->add_option("--server-key", server_key_, "The engine's public.key (with --curve-keys)");
    slurm_->add_flag("--insecure", insecure_,
                     "Workers connect without CURVE keys to a TCP engine (trusted clusters "
                     "only; each worker gets --insecure)");
    slurm_->add_option("--srun", srun_, "srun to use (default: srun on PATH)");
    slurm_
        ->add_option("--worker-option", worker_options_,
                     "An extra option for each worker, e.g. --worker-option=--allow-compiler=hipcc "
                     "(repeatable)")
        ->allow_extra_args(false); // one value per occurrence, so `--` still starts srun's options
    slurm_->add_flag("--dry-run", dry_run_, "Print the srun command line and exit");
    slurm_->add_option("srun_options", srun_options_,
                       "After --: options for srun (--partition, --time, --account, ...)");
    slurm_->positionals_at_end();
  }

  bool chosen() const override { return slurm_->parsed(); }

  int run() override {
    if (curve_keys_.empty() != server_key_.empty()) {
      std::fprintf(stderr, "rocm-perf workers slurm: error: --curve-keys and --server-key go "
                           "together; fix: pass both, or neither with --insecure on a trusted "
                           "cluster\n");
      return bad_input;
    }
    if (curve_keys_.empty() && !insecure_) {
      // The nodes' workers would refuse to start anyway; say so before anything is queued.
      const std::string why =
          workers::keyless_endpoint_refusal(endpoint_, "--curve-keys DIR --server-key FILE");
      if (!why.empty()) {
        std::fprintf(stderr, "rocm-perf workers slurm: error: --connect %s\n", why.c_str());
        return bad_input;
      }
    }
    std::vector<std::string> argv = {srun_, "--nodes=" + std::to_string(nodes_),
                                     "--ntasks=" + std::to_string(nodes_), "--ntasks-per-node=1",
                                     "--kill-on-bad-exit=0"};
    argv.insert(argv.end(), srun_options_.begin(), srun_options_.end());
    argv.insert(argv.end(), {self_path(), "worker", "compile", "--connect", endpoint_, "--once"});
    if (!curve_keys_.empty())
      argv.insert(argv.end(),
                  {"--curve-keys", curve_keys_.string(), "--server-key", server_key_.string()});
    else if (insecure_)
      argv.push_back("--insecure");
    argv.insert(argv.end(), worker_options_.begin(), worker_options_.end());
    if (dry_run_) {
      for (std::size_t i = 0; i < argv.size(); ++i)
        std::printf("%s%s", i ? " " : "", argv[i].c_str());
      std::printf("\n");
      return done;
    }
    install_signal_handlers("rocm-perf workers slurm: stopping the workers (SIGTERM to srun)");
    std::vector<char*> raw;
    for (auto& arg : argv)
      raw.push_back(arg.data());
    raw.push_back(nullptr);
    pid_t pid = 0;
    if (const int rc = ::posix_spawnp(&pid, raw[0], nullptr, nullptr, raw.data(), environ);
        rc != 0) {
      std::fprintf(stderr,
                   "rocm-perf workers slurm: error: cannot run %s: %s; fix: install Slurm's "
                   "client (Debian: slurm-client) or pass --srun PATH\n",
                   srun_.c_str(), std::strerror(rc));
      return bad_input;
    }
    bool forwarded = false;
    int status = 0;
    while (true) {
      const pid_t got = ::waitpid(pid, &status, WNOHANG);
      if (got == pid)
        break;
      if (got < 0 && errno != EINTR) {
        std::fprintf(stderr, "rocm-perf workers slurm: error: waitpid: %s\n", std::strerror(errno));
        return run_failed;
      }
      if (stop_requested() && !forwarded) {
        ::kill(pid, SIGTERM);
        forwarded = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (forwarded)
      return interrupted;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      return done;
    std::fprintf(stderr, "rocm-perf workers slurm: srun %s %d; its output above says why\n",
                 WIFEXITED(status) ? "exited with" : "was killed by signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return run_failed;
  }

private:
  CLI::App* slurm_ = nullptr;
  int nodes_ = 1;
  std::string endpoint_;
  std::filesystem::path curve_keys_;
  std::filesystem::path server_key_;
  bool insecure_ = false;
  std::string srun_ = "srun";
  std::vector<std::string> worker_options_;
  std::vector<std::string> srun_options_;
  bool dry_run_ = false;
};

} // namespace

command_ptr make_workers_command() {
  return std::make_unique<workers_command>();
}

} // namespace rpl::engine::commands
