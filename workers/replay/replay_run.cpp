#include "workers/replay/replay_run.hpp"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "workers/process/child_process.hpp"
#include "workers/process/find_program.hpp"

namespace rpl::workers::replay {

std::optional<std::filesystem::path> find_cuda_replay_program() {
  return find_installed("RPL_REPLAY_CUDA", {"rpl-replay-cuda", "../bin/rpl-replay-cuda"});
}

std::optional<std::filesystem::path> find_hsa_replay_program() {
  return find_installed("RPL_REPLAY_HSA", {"../hip/rpl-replay-hsa", "../bin/rpl-replay-hsa"});
}

namespace {
std::uint64_t next_id() {
  static std::atomic<std::uint64_t> id{0};
  return ++id;
}
} // namespace

replay_run_result run_replay(const replay_run_options& options) {
  const auto json_file =
      std::filesystem::temp_directory_path() /
      ("rpl-replay-" + std::to_string(::getpid()) + "-" + std::to_string(next_id()) + ".json");
  child_options child;
  child.argv = {options.program.string(),
                options.capture.string(),
                "--iterations",
                std::to_string(options.iterations),
                "--warmup",
                std::to_string(options.warmup),
                "--json-out",
                json_file.string()};
  if (options.tolerance_abs) {
    child.argv.insert(child.argv.end(),
                      {"--tolerance-abs", std::to_string(*options.tolerance_abs)});
  }
  if (options.tolerance_rel) {
    child.argv.insert(child.argv.end(),
                      {"--tolerance-rel", std::to_string(*options.tolerance_rel)});
  }
  if (options.relocate) {
    child.argv.push_back("--relocate");
  }
  auto add = [&](const char* flag, const std::string& value) {
    if (!value.empty()) {
      child.argv.insert(child.argv.end(), {flag, value});
    }
  };
  add("--timing", options.timing);
  add("--code-object", options.code_object.string());
  add("--kernel", options.kernel);
  for (const auto& [name, value] : options.environment) {
    child.environment.emplace_back(name, value);
  }
  const auto outcome = run_child(child, options.timeout);
  replay_run_result result;
  result.exit_code =
      outcome.launched && !outcome.timed_out && outcome.term_signal == 0 ? outcome.exit_code : 1;
  result.message = outcome.output;
  if (!outcome.launched) {
    result.message = outcome.launch_error;
  } else if (outcome.timed_out) {
    result.message = "the replay timed out after " +
                     std::to_string(options.timeout.count() / 1000) + " s\n" + outcome.output;
  } else if (outcome.term_signal != 0) {
    result.message = "the replay was killed by signal " + std::to_string(outcome.term_signal) +
                     "\n" + outcome.output;
  }
  std::ifstream in(json_file);
  if (in) {
    try {
      result.document = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
      result.document = nullptr;
    }
  }
  std::error_code ec;
  std::filesystem::remove(json_file, ec);
  return result;
}

} // namespace rpl::workers::replay
