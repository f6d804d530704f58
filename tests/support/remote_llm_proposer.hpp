#pragma once
// A remote LLM proposer as a test starts one (integration and system tests: it spawns
// processes): its key pair from `rocm-perf keys generate`, the scripted test double of its LLM
// (tests/tools/scripted_llm_server.py) on a loopback port the system chose, and the `rocm-perf
// worker propose --kind llm` process itself, started by hand as on another host, with the API
// key in its environment only.

#include <chrono>
#include <filesystem>
#include <optional>
#include <signal.h>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::testing {

/// `rocm-perf keys generate DIR`, as a user makes a key pair; the public key (Z85, 40
/// characters), or empty when the command failed.
inline std::string generate_keys(const std::filesystem::path& dir) {
  const auto out = run_rocm_perf({"keys", "generate", dir.string()});
  if (out.exit_code != 0) {
    return {};
  }
  return read_text(dir / "public.key").substr(0, 40);
}

/// tests/tools/scripted_llm_server.py on a loopback port the system chose, answering `steps`.
/// With `key`, it answers 401 to any request without `Authorization: Bearer KEY`; the key is in
/// the server's environment only.
class scripted_llm {
public:
  scripted_llm(const std::filesystem::path& dir,
               const nlohmann::json& steps,
               const std::string& key = {})
      : port_file_(dir / "llm.port"), log_(dir / "llm-requests.jsonl") {
    write_file(dir / "llm-script.json", steps.dump());
    workers::child_options options;
    options.argv = {"python3",     (source_dir / "tests/tools/scripted_llm_server.py").string(),
                    "--script",    (dir / "llm-script.json").string(),
                    "--port-file", port_file_.string(),
                    "--log",       log_.string()};
    if (!key.empty()) {
      options.argv.push_back("--require-key");
      options.environment.emplace_back("RPL_LLM_API_KEY", key);
    }
    options.capture_output = false;
    options.reap_descendants = false;
    process_.emplace(workers::child_process::spawn(options));
    if (wait_until([&] { return std::filesystem::exists(port_file_); }, std::chrono::seconds(10))) {
      port_ = std::stoi(read_text(port_file_));
    }
  }

  bool started() const { return port_ > 0; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  /// Each request as the server logged it (the Authorization value itself is never logged).
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    if (!std::filesystem::exists(log_)) {
      return out;
    }
    std::istringstream lines(read_text(log_));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) {
        out.push_back(nlohmann::json::parse(line));
      }
    }
    return out;
  }

private:
  std::filesystem::path port_file_;
  std::filesystem::path log_;
  std::optional<workers::child_process> process_;
  int port_ = 0;
};

/// `rocm-perf worker propose --kind llm --connect ENDPOINT` with 200 ms heartbeats, a quick
/// reconnect, `--llm-model remote-scripted` (its proposals are "llm:remote-scripted"), then
/// `keys` (`--curve-keys DIR --server-key FILE`, or none), and RPL_LLM_API_KEY=`api_key` in its
/// environment alone when given. Its output is captured: stop it with stop_and_drain.
inline workers::child_process start_remote_llm_proposer(const std::string& endpoint,
                                                        const std::vector<std::string>& keys,
                                                        const std::string& llm_endpoint,
                                                        const std::string& api_key) {
  workers::child_options options;
  options.argv = {rocm_perf.string(),
                  "worker",
                  "propose",
                  "--kind",
                  "llm",
                  "--connect",
                  endpoint,
                  "--heartbeat-ms",
                  "200",
                  "--reconnect-ms",
                  "100",
                  "--reconnect-max-ms",
                  "400",
                  "--llm-endpoint",
                  llm_endpoint,
                  "--llm-model",
                  "remote-scripted",
                  "--llm-timeout-s",
                  "20"};
  options.argv.insert(options.argv.end(), keys.begin(), keys.end());
  if (!api_key.empty()) {
    options.environment.emplace_back("RPL_LLM_API_KEY", api_key);
  }
  options.max_output_bytes = 1 << 20;
  return workers::child_process::spawn(options);
}

/// SIGTERM, then the outcome (a worker leaves with 0 on SIGTERM). Its output is read while it
/// stops, so that a process still writing cannot block on a full pipe.
inline workers::child_outcome stop_and_drain(workers::child_process& process) {
  ::kill(process.pid(), SIGTERM);
  wait_until(
      [&] {
        process.drain_output();
        return process.try_reap();
      },
      std::chrono::seconds(20));
  return process.finish();
}

} // namespace rpl::testing
