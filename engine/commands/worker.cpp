#include <cstdio>

#include "engine/commands/command.hpp"
#include "stages/optimize/proposer_kinds.hpp"
#include "workers/compile/compile_worker.hpp"
#include "workers/proposers/llm/llm_proposer.hpp"
#include "workers/proposers/proposer_worker.hpp"
#include "workers/proposers/rule/rule_proposer.hpp"
#include "workers/protocol/endpoint_policy.hpp"

namespace rpl::engine::commands {

namespace {

/// `rocm-perf worker compile`: a compile worker process serving an engine's broker.
class worker_command final : public command {
public:
  void add_to(CLI::App& app) override {
    auto* worker = app.add_subcommand("worker", "Run a worker process");
    worker->require_subcommand(1);
    compile_ = worker->add_subcommand("compile", "Compile worker serving an engine");
    compile_->add_option("--connect", options_.endpoint, "Engine endpoint")->required();
    compile_->add_option("--heartbeat-ms", heartbeat_ms_, "Heartbeat interval")
        ->check(CLI::Range(10, 60000));
    compile_->add_option("--liveness", options_.liveness, "Missed heartbeats before reconnecting")
        ->check(CLI::Range(1, 100));
    compile_->add_option("--reconnect-ms", reconnect_ms_, "First reconnect back-off");
    compile_->add_option("--reconnect-max-ms", reconnect_max_ms_, "Largest reconnect back-off");
    compile_->add_option("--allow-compiler", compilers_,
                         "Allowed compiler: a name, run as this worker's PATH finds it, or an "
                         "absolute path (repeatable; replaces the default list)");
    compile_->add_option("--allow-path", options_.allowed_paths,
                         "A file or folder (headers, libraries) that jobs may read besides their "
                         "own folder (repeatable)");
    compile_->add_flag("--no-sandbox", no_sandbox_,
                       "Run compilers without the bubblewrap sandbox (where bwrap cannot work)");
    compile_->add_option("--work-dir", options_.work_root, "Where job folders are created");
    compile_
        ->add_option("--slots", options_.slots,
                     "Jobs compiled at once (default: one per usable core)")
        ->check(CLI::Range(1, 4096));
    compile_->add_flag("--keep-temp", options_.keep_temp, "Keep job folders (debugging)");
    compile_->add_flag("--quiet", quiet_, "Log warnings and errors only");
    compile_->add_flag("--once", options_.once,
                       "Serve one engine: leave (exit 0) when it finishes or goes silent, instead "
                       "of waiting for the next (workers started for one sweep, e.g. by Slurm)");
    compile_->add_option("--curve-keys", curve_keys_,
                         "This worker's CURVE key pair folder (rocm-perf keys generate), for an "
                         "engine started with --curve-keys");
    compile_->add_flag("--insecure", insecure_,
                       "Connect without CURVE keys to an endpoint other than an ipc:// path in a "
                       "private folder (any engine that reaches this worker could send it jobs; "
                       "trusted hosts and networks only)");
    compile_->add_option("--server-key", server_key_,
                         "The engine's public.key (with --curve-keys)");

    propose_ = worker->add_subcommand(
        "propose", "Proposer worker: source changes to a kernel (rule: libclang transforms; llm: "
                   "an OpenAI-compatible endpoint)");
    propose_->add_option("--kind", propose_options_.kind, "rule or llm")
        ->required()
        ->check(CLI::IsMember(stages::optimize::proposer_kind_names()));
    propose_->add_option("--connect", propose_options_.endpoint, "Engine endpoint")->required();
    propose_->add_option("--heartbeat-ms", heartbeat_ms_, "Heartbeat interval")
        ->check(CLI::Range(10, 60000));
    propose_
        ->add_option("--liveness", propose_options_.liveness,
                     "Missed heartbeats before reconnecting")
        ->check(CLI::Range(1, 100));
    propose_->add_option("--reconnect-ms", reconnect_ms_, "First reconnect back-off");
    propose_->add_option("--reconnect-max-ms", reconnect_max_ms_, "Largest reconnect back-off");
    propose_->add_option("--llm-endpoint", llm_.endpoint,
                         "With --kind llm (required): OpenAI-compatible endpoint "
                         "(http://host:port/v1); the key, if any, in this process's "
                         "RPL_LLM_API_KEY");
    propose_->add_option("--llm-model", llm_.model,
                         "With --kind llm (required): the model name the endpoint serves");
    propose_->add_option("--llm-timeout-s", llm_timeout_s_, "Per-request timeout (default 120)")
        ->check(CLI::Range(1, 3600));
    propose_->add_flag("--quiet", quiet_, "Log warnings and errors only");
    propose_->add_flag("--once", propose_options_.once, "Serve one engine, then leave");
    propose_->add_option("--curve-keys", curve_keys_,
                         "This proposer's CURVE key pair folder (rocm-perf keys generate; its "
                         "public.key on the engine's --allow-keys), for an engine started with "
                         "--listen");
    propose_->add_flag("--insecure", insecure_,
                       "Connect without CURVE keys to an endpoint other than an ipc:// path in a "
                       "private folder (trusted hosts and networks only)");
    propose_->add_option("--server-key", server_key_,
                         "The engine's public.key (with --curve-keys)");
  }

  int run_propose() {
    setup_logging(quiet_);
    propose_options_.heartbeat = std::chrono::milliseconds(heartbeat_ms_);
    propose_options_.reconnect_initial = std::chrono::milliseconds(reconnect_ms_);
    propose_options_.reconnect_max = std::chrono::milliseconds(reconnect_max_ms_);
    if (curve_keys_.empty() != server_key_.empty()) {
      std::fprintf(stderr,
                   "rocm-perf worker propose: error: --curve-keys and --server-key go together: "
                   "the proposer's key pair and the engine's public key; fix: pass both\n");
      return bad_input;
    }
    // Refused here rather than answering every job "unavailable": a proposer started by hand on
    // another host would otherwise connect, look healthy and never propose anything.
    if (stages::optimize::find_proposer_kind(propose_options_.kind)->needs_endpoint &&
        (llm_.endpoint.empty() || llm_.model.empty())) {
      std::fprintf(stderr,
                   "rocm-perf worker propose: error: --kind llm needs --llm-endpoint URL and "
                   "--llm-model NAME; fix: e.g. --llm-endpoint http://127.0.0.1:8000/v1 "
                   "--llm-model MODEL (the key, if any, in RPL_LLM_API_KEY)\n");
      return bad_input;
    }
    if (const std::string why = keyless_refusal(propose_options_.endpoint); !why.empty()) {
      std::fprintf(stderr, "rocm-perf worker propose: error: --connect %s\n", why.c_str());
      return bad_input;
    }
    if (!curve_keys_.empty()) {
      try {
        workers::require_curve("--curve-keys");
        propose_options_.curve = workers::curve_client_keys{workers::read_keypair(curve_keys_),
                                                            workers::read_public_key(server_key_)};
      } catch (const workers::curve_error& error) {
        std::fprintf(stderr, "rocm-perf worker propose: error: %s\n", error.what());
        return bad_input;
      }
    }
    workers::proposer_ptr proposer;
    if (propose_options_.kind == "rule") {
      proposer = std::make_unique<workers::rule_proposer>();
    } else {
      llm_.timeout = std::chrono::seconds(llm_timeout_s_);
      proposer = std::make_unique<workers::llm_proposer>(llm_);
    }
    install_signal_handlers();
    try {
      return workers::run_proposer_worker(propose_options_, std::move(proposer), stop_requested());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "rocm-perf worker propose: error: %s\n", error.what());
      return bad_input;
    }
  }

  bool chosen() const override { return compile_->parsed() || propose_->parsed(); }

  int run() override {
    if (propose_->parsed()) {
      return run_propose();
    }
    setup_logging(quiet_);
    options_.heartbeat = std::chrono::milliseconds(heartbeat_ms_);
    options_.reconnect_initial = std::chrono::milliseconds(reconnect_ms_);
    options_.reconnect_max = std::chrono::milliseconds(reconnect_max_ms_);
    if (!compilers_.empty()) {
      options_.allowed_compilers = compilers_;
    }
    // A worker serves whoever holds the engine's endpoint: it sandboxes its compilers or, where
    // it cannot, starts only when told to go without (--no-sandbox).
    options_.sandbox = no_sandbox_ ? workers::sandbox_mode::off : workers::sandbox_mode::required;
    for (auto& path : options_.allowed_paths) {
      std::error_code error;
      const auto absolute = std::filesystem::absolute(path, error);
      if (error || !std::filesystem::exists(absolute, error)) {
        std::fprintf(stderr,
                     "rocm-perf worker compile: error: --allow-path %s does not exist; fix: name "
                     "an existing file or folder\n",
                     path.string().c_str());
        return bad_input;
      }
      path = absolute.lexically_normal();
    }
    if (curve_keys_.empty() != server_key_.empty()) {
      std::fprintf(stderr,
                   "rocm-perf worker compile: error: --curve-keys and --server-key go together: "
                   "the worker's key pair and the engine's public key; fix: pass both\n");
      return bad_input;
    }
    if (const std::string why = keyless_refusal(options_.endpoint); !why.empty()) {
      std::fprintf(stderr, "rocm-perf worker compile: error: --connect %s\n", why.c_str());
      return bad_input;
    }
    if (!curve_keys_.empty()) {
      try {
        workers::require_curve("--curve-keys");
        options_.curve = workers::curve_client_keys{workers::read_keypair(curve_keys_),
                                                    workers::read_public_key(server_key_)};
        options_.private_paths.push_back(std::filesystem::absolute(curve_keys_));
      } catch (const workers::curve_error& error) {
        std::fprintf(stderr, "rocm-perf worker compile: error: %s\n", error.what());
        return bad_input;
      }
    }
    install_signal_handlers();
    try {
      return workers::run_compile_worker(options_, stop_requested());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "rocm-perf worker compile: error: %s\n", error.what());
      return bad_input;
    }
  }

private:
  CLI::App* compile_ = nullptr;
  CLI::App* propose_ = nullptr;
  workers::proposer_worker_options propose_options_;
  workers::llm_proposer_options llm_;
  std::int64_t llm_timeout_s_ = 120;
  workers::compile_worker_options options_;
  bool quiet_ = false;
  bool no_sandbox_ = false;
  std::int64_t heartbeat_ms_ = 1000;
  std::int64_t reconnect_ms_ = 1000;
  std::int64_t reconnect_max_ms_ = 32000;
  std::vector<std::string> compilers_;
  std::filesystem::path curve_keys_;
  std::filesystem::path server_key_;
  bool insecure_ = false;

  /// Without keys a worker admits no engine it cannot authenticate, except over an ipc:// path in
  /// a private folder (workers/protocol/endpoint_policy.hpp) or with --insecure.
  std::string keyless_refusal(const std::string& endpoint) const {
    if (!curve_keys_.empty() || insecure_) {
      return {};
    }
    return workers::keyless_endpoint_refusal(endpoint, "--curve-keys DIR --server-key FILE");
  }
};

} // namespace

command_ptr make_worker_command() {
  return std::make_unique<worker_command>();
}

} // namespace rpl::engine::commands
