#include "engine/commands/command.hpp"
#include "engine/commands/profile_command.hpp"

namespace rpl::engine::commands {

namespace {

class analyze_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand("analyze", "Analyze rocpd databases recorded elsewhere");
    cmd_->add_option("databases", options_.inputs, "rocpd databases or folders of them")
        ->expected(-1);
    cmd_->add_flag("--per-run", options_.per_run,
                   "Each argument is one run (for stability across runs)");
    cmd_->add_flag("--json", options_.report.json, "Print strict JSON");
    cmd_->add_flag("--quiet", options_.report.quiet, "Print only the runtime in ms");
    cmd_->add_option("--out", options_.report.out, "Write profile.json here");
    cmd_->add_option("--arch", options_.report.arch,
                     "Target for occupancy (default: the agent's)");
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(true);
    return analyze_main(options_);
  }

private:
  CLI::App* cmd_ = nullptr;
  analyze_options options_;
};

}  // namespace

command_ptr make_analyze_command() { return std::make_unique<analyze_command>(); }

}  // namespace rpl::engine::commands
