#include "engine/commands/command.hpp"
#include "engine/commands/inspect_command.hpp"

namespace rpl::engine::commands {

namespace {

class inspect_command final : public command {
public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand(
        "inspect",
        "Kernels of a code object, executable or shared library: resources and occupancy");
    cmd_->add_option("files", options_.files, "Code objects, executables, shared libraries")
        ->expected(-1);
    cmd_->add_option("--arch", options_.arch, "Target (default: the embedded one)");
    block_opt_ = cmd_->add_option("--block", block_, "Also at this block size")
                     ->check(CLI::Range(1, 65536));
    cmd_->add_flag("--json", options_.json, "Print JSON");
  }

  bool chosen() const override { return cmd_->parsed(); }

  int run() override {
    setup_logging(true);
    if (*block_opt_) {
      options_.block = block_;
    }
    return inspect_main(options_);
  }

private:
  CLI::App* cmd_ = nullptr;
  inspect_options options_;
  std::uint32_t block_ = 0;
  CLI::Option* block_opt_ = nullptr;
};

}  // namespace

command_ptr make_inspect_command() { return std::make_unique<inspect_command>(); }

}  // namespace rpl::engine::commands
