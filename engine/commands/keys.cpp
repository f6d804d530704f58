// `rocm-perf keys generate DIR`: a CurveZMQ key pair for the engine or a compile worker
// (workers/protocol/curve_keys.hpp): DIR/public.key and DIR/secret.key, mode 0600, never over
// existing keys. The public key is printed, for the other side's allow-list or --server-key.
#include <cstdio>

#include "engine/commands/command.hpp"
#include "workers/protocol/curve_keys.hpp"

namespace rpl::engine::commands {

namespace {

class keys_command final : public command {
public:
  void add_to(CLI::App& app) override {
    auto* keys = app.add_subcommand("keys", "CurveZMQ keys for authenticated remote workers");
    keys->require_subcommand(1);
    generate_ = keys->add_subcommand(
        "generate", "Write a key pair into DIR (public.key, secret.key; mode 0600)");
    generate_->add_option("dir", dir_, "Folder for the pair (created 0700 when missing)")
        ->required();
  }

  bool chosen() const override { return generate_->parsed(); }

  int run() override {
    try {
      const auto pair = workers::generate_keypair();
      workers::write_keypair(dir_, pair);
      std::printf("%s\n", pair.public_key.c_str());
      std::fflush(stdout);
      std::fprintf(stderr,
                   "rocm-perf keys: wrote %s/public.key and %s/secret.key (mode 0600); list the "
                   "public key above in the engine's --allow-keys file (a worker), or pass "
                   "public.key to the workers' --server-key (the engine)\n",
                   dir_.string().c_str(), dir_.string().c_str());
      return done;
    } catch (const workers::curve_error& error) {
      std::fprintf(stderr, "rocm-perf keys generate: error: %s\n", error.what());
      return bad_input;
    }
  }

private:
  CLI::App* generate_ = nullptr;
  std::filesystem::path dir_;
};

} // namespace

command_ptr make_keys_command() {
  return std::make_unique<keys_command>();
}

} // namespace rpl::engine::commands
