#include <cstdio>

#include "engine/commands/command.hpp"
#include "engine/optimize/app_mode.hpp"
#include "engine/optimize/run_optimize.hpp"
#include "stages/optimize/proposer_kinds.hpp"

namespace rpl::engine::commands {

namespace {

/// `rocm-perf optimize`: guarded closed-loop optimization of one kernel (docs/optimize.md).
class optimize_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand(
        "optimize",
        "Propose source changes to a kernel, guard, validate and measure them, keep only what is "
        "faster beyond the noise");
    cmd_->add_option("--source", options_.sources,
                     "Source file (repeatable; shipped by name); with -- APP it narrows the "
                     "search to these files");
    cmd_->add_option("--source-dir", options_.source_dir,
                     "With -- APP and no --source: the folder searched for the kernels' "
                     "definitions (default: the current directory) and copied for --app-build");
    cmd_->add_option("--replay", options_.replay_dir,
                     "A dispatch captured by rocm-perf isolate: optimize --kernel (the "
                     "capture's) on the replay lane");
    cmd_->add_option("--kernel", options_.kernels,
                     "The kernel to optimize, as the source names it");
    cmd_->add_option("--launch", options_.launch,
                     "Launch file (docs/launch-file.md): how the kernel lane runs the kernel");
    cmd_->add_option("--build-template", options_.build_template,
                     "Compile command writing a code object to {OUT}, e.g. \"nvcc -cubin "
                     "-arch=sm_90 gemm.cu -o {OUT}\"; with -- APP, {SOURCE} is the kernel's "
                     "file");
    cmd_->add_option("--param", params_,
                     "NAME=VALUE for the build template's and the launch file's names "
                     "(repeatable)");
    cmd_->add_option("--proposer", options_.proposer, "rule, llm or both")
        ->check(CLI::IsMember(stages::optimize::proposer_choices()));
    cmd_->add_option("--iterations", options_.iterations, "Proposal rounds (default 3)")
        ->check(CLI::Range(1, 1000));
    cmd_->add_option("--time-budget", budget_s_,
                     "Seconds for the whole run: profile, captures, every kernel, the rebuild "
                     "and re-profile (reserved first); kernels left over are not_reached")
        ->check(CLI::Range(0, 1000000));
    cmd_->add_option("--devices", options_.devices, "GPUs: all, or a comma list (default 0)");
    cmd_->add_option("--out", options_.out,
                     "Folder for report.md/json, accepted diffs, optimize.sqlite, attempts.jsonl "
                     "(default optimize-out)");
    cmd_->add_flag("--apply", options_.apply,
                   "Write accepted changes into the source files (a backup is kept in OUT/backup)");
    cmd_->add_flag("--resume", options_.resume,
                   "Reuse the verdicts of an earlier run in --out instead of judging again");
    cmd_->add_option("--rollback", rollback_,
                     "Restore the files an earlier --apply changed (OUT of that run)");
    cmd_->add_flag("--force", force_, "With --rollback: restore even files edited since");
    cmd_->add_flag("--json", options_.json, "Print the report as JSON");
    cmd_->add_option("--llm-endpoint", options_.llm_endpoint,
                     "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (key in "
                     "RPL_LLM_API_KEY)");
    cmd_->add_option("--llm-model", options_.llm_model, "Model name the endpoint serves");
    cmd_->add_option("--llm-timeout-s", options_.llm_timeout_s,
                     "One LLM request at most, retries included (default 120)")
        ->check(CLI::Range(1, 3600));
    cmd_->add_option("--rounds", options_.rounds,
                     "Paired rounds per comparison (default 15, at least 6: fewer cannot reach "
                     "95 % confidence; the final comparison takes twice as many)")
        ->check(CLI::Range(6, 1000));
    cmd_->add_option("--tune-budget", options_.tune_budget,
                     "Configurations timed per proposal with tunable macros (the rule "
                     "proposer's unroll knobs; default 24, 0: skip such proposals)")
        ->check(CLI::Range(0, 100000));
    cmd_->add_option("--runs-per-round", options_.runs_per_round,
                     "Launches per side and round (default 5)")
        ->check(CLI::Range(1, 10000));
    cmd_->add_option("--noise", options_.noise_target,
                     "Smallest relative difference that counts (default 0.01)")
        ->check(CLI::Range(0.0, 0.5));
    cmd_->add_option("--seed", options_.seed, "Seed of the validation inputs (default 1)");
    cmd_->add_option("--arch", options_.device_arch,
                     "The GPU's architecture for the static screen (sm_90, gfx90a)");
    cmd_->add_option("--compile-workers", options_.compile_workers,
                     "Local compile workers (default: all cores but two, 2 to 16)");
    cmd_->add_option("--top", options_.top,
                     "With -- APP: optimize the application's top K kernels (default 3)")
        ->check(CLI::Range(1, 1000));
    cmd_->add_option("--app-build", options_.app_build,
                     "With -- APP: rebuild it from the patched sources ({SRC_DIR}: a scratch "
                     "copy of --source-dir's tree, or of the --source files) and profile it "
                     "again");
    cmd_->add_option("--listen", options_.listen,
                     "Endpoint for remote proposers and compile workers (with --curve-keys and "
                     "--allow-keys), e.g. tcp://0.0.0.0:5556");
    cmd_->add_option("--curve-keys", options_.curve_keys, "This engine's CURVE key pair folder");
    cmd_->add_option("--allow-keys", options_.allow_keys,
                     "The public keys of the workers and proposers it admits");
    cmd_->add_flag("--quiet", quiet_, "Log warnings and errors only");
    cmd_->add_option("app", options_.app, "-- APP [ARGS...]: the application to profile")
        ->expected(-1);
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(quiet_);
    if (!rollback_.empty()) {
      return rollback_optimize(rollback_, force_);
    }
    for (const auto& p : params_) {
      const auto eq = p.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::fprintf(stderr,
                     "rocm-perf optimize: error: --param %s: expected NAME=VALUE, e.g. "
                     "--param TILE_M=64\n",
                     p.c_str());
        return bad_input;
      }
      options_.params.emplace_back(p.substr(0, eq), p.substr(eq + 1));
    }
    options_.time_budget = std::chrono::seconds(budget_s_);
    install_signal_handlers("rocm-perf optimize: stopping after the attempt in flight (a second "
                            "Ctrl-C or SIGTERM exits at once)\n");
    if (!options_.source_dir.empty() && options_.app.empty()) {
      std::fprintf(stderr,
                   "rocm-perf optimize: error: --source-dir %s needs the application "
                   "after --; fix: ... --top K --source-dir DIR -- APP ARGS\n",
                   options_.source_dir.c_str());
      return bad_input;
    }
    if (!options_.app_build.empty() && options_.app.empty()) {
      std::fprintf(stderr, "rocm-perf optimize: error: --app-build needs the application after "
                           "--; fix: ... --app-build STR -- APP ARGS\n");
      return bad_input;
    }
    try {
      return run_optimize(options_, stop_requested());
    } catch (
        const campaign_input_error& error) { // optimize_input_error, and the shared inputs' errors
      std::fprintf(stderr, "rocm-perf optimize: error: %s\n", error.what());
      return bad_input;
    } catch (const app_run_error& error) {
      std::fprintf(stderr, "rocm-perf optimize: error: %s\n", error.what());
      return run_failed;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "rocm-perf optimize: error: %s\n", error.what());
      return run_failed;
    }
  }

private:
  CLI::App* cmd_ = nullptr;
  optimize_options options_;
  std::vector<std::string> params_;
  std::int64_t budget_s_ = 0;
  std::filesystem::path rollback_;
  bool force_ = false;
  bool quiet_ = false;
};

} // namespace

command_ptr make_optimize_command() {
  return std::make_unique<optimize_command>();
}

} // namespace rpl::engine::commands
