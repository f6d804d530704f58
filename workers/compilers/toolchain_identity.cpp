#include "workers/compilers/toolchain_identity.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <future>
#include <unistd.h>

#include "stages/search/candidate_key.hpp"
#include "workers/process/child_process.hpp"
#include "workers/process/find_program.hpp"

namespace rpl::workers {

namespace fs = std::filesystem;

namespace {

/// A path as given, or a bare name looked up in PATH; only an executable regular file counts.
std::optional<fs::path> find_program(const std::string& name) {
  if (name.empty())
    return std::nullopt;
  const auto found =
      name.find('/') != std::string::npos ? std::optional<fs::path>(name) : find_on_path(name);
  std::error_code error;
  if (!found || !fs::is_regular_file(*found, error) || ::access(found->c_str(), X_OK) != 0)
    return std::nullopt;
  return found;
}

} // namespace

std::string version_banner(std::string_view output) {
  std::string banner;
  while (!output.empty()) {
    const auto end = output.find('\n');
    std::string_view line = output.substr(0, end);
    output = end == std::string_view::npos ? std::string_view() : output.substr(end + 1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
      line.remove_suffix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
      line.remove_prefix(1);
    // clang's install folder differs between hosts that run the very same clang.
    if (line.empty() || line.rfind("InstalledDir:", 0) == 0)
      continue;
    banner += (banner.empty() ? "" : "; ") + std::string(line);
  }
  return banner;
}

std::string
toolchain_id_of(const std::string& name, const std::string& version, const std::string& hash) {
  return name + " | " + version + " | " + hash;
}

std::optional<messages::toolchain> identify_toolchain(const std::string& name,
                                                      std::chrono::milliseconds timeout) {
  const auto found = find_program(name);
  if (!found)
    return std::nullopt;
  std::error_code error;
  const fs::path resolved = fs::canonical(*found, error);
  // One read of the whole file (nvcc is 30 MB; through istreambuf_iterator, a character at a
  // time, reading it took a worker most of a CPU second at every start).
  std::ifstream in(error ? *found : resolved, std::ios::binary | std::ios::ate);
  if (!in)
    return std::nullopt;
  std::string bytes(static_cast<std::size_t>(in.tellg()), '\0');
  if (!in.seekg(0) || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    return std::nullopt;
  messages::toolchain t;
  t.name = fs::path(name).filename().string();
  t.path = (error ? *found : resolved).string();
  t.hash = stages::wide_hash(bytes);
  // Run as found (not as resolved): drivers such as g++ or clang read their own argv[0].
  child_options options;
  options.argv = {found->string(), "--version"};
  options.max_output_bytes = 4096;
  // stdout only: Debian's hipcc runs rocm_agent_enumerator, whose traceback on a host without an
  // AMD GPU would otherwise be the "version" and split one compiler into two identities.
  options.capture_stderr = false;
  options.reap_descendants = false;
  const auto outcome = run_child(options, timeout);
  if (outcome.launched && outcome.exit_code == 0)
    t.version = version_banner(outcome.output);
  t.id = toolchain_id_of(t.name, t.version, t.hash);
  return t;
}

std::vector<messages::toolchain> identify_toolchains(const std::vector<std::string>& names) {
  // All at once: each is mostly waiting for a `--version` process (hipcc's runs perl, clang and
  // python), and a worker sends READY only when the last one is known.
  std::vector<std::future<std::optional<messages::toolchain>>> pending;
  pending.reserve(names.size());
  for (const auto& name : names)
    pending.push_back(std::async(std::launch::async, [&name] { return identify_toolchain(name); }));
  std::vector<messages::toolchain> found;
  for (auto& each : pending)
    if (auto t = each.get())
      found.push_back(std::move(*t));
  return found;
}

} // namespace rpl::workers
