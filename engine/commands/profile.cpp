#include "engine/commands/command.hpp"
#include "engine/commands/profile_command.hpp"

namespace rpl::engine::commands {

namespace {

class profile_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand("profile",
                              "Run an application under a tracer and report its kernels: runtime, "
                              "stability, resources, occupancy");
    cmd_->add_option("--backend", options_.backend,
                     "rocm (rocprofv3) | cuda (CUPTI tracer) | timing | auto")
        ->check(CLI::IsMember({"rocm", "cuda", "timing", "auto"}));
    cmd_->add_option("--tracer", options_.tracer, "CUPTI tracer library for --backend cuda");
    cmd_->add_option("--runs", options_.runs, "Runs of the application");
    cmd_->add_flag("--json", options_.report.json,
                   "Print strict JSON (docs/schema/profile.schema.json)");
    cmd_->add_flag("--quiet", options_.report.quiet, "Print only the runtime in ms");
    cmd_->add_flag("--debug", options_.debug, "Show rocprofv3's own output; keep its traces");
    cmd_->add_flag("--no-rocprof", options_.no_rocprof,
                   "Timing backend: whole-process wall time, no per-kernel data");
    cmd_->add_option("--out", options_.report.out, "Write profile.json (and the traces) here");
    cmd_->add_option("--arch", options_.report.arch,
                     "Target for occupancy (default: the agent's)");
    cmd_->add_option("--rocprofv3", options_.rocprofv3, "rocprofv3 executable (default: PATH)");
    cmd_->add_option("--timeout", options_.timeout_s, "Per-run timeout, seconds (0: none)");
    cmd_->add_option("app", options_.app, "-- APP [ARGS...]")->expected(-1);
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(true);
    return profile_main(options_);
  }

private:
  CLI::App* cmd_ = nullptr;
  profile_options options_;
};

}  // namespace

command_ptr make_profile_command() { return std::make_unique<profile_command>(); }

}  // namespace rpl::engine::commands
