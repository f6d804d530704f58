#include "engine/campaign/campaign_inputs.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace rpl::engine {

std::string read_input_file(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw campaign_input_error(what + " " + path.string() + ": cannot read the file (" +
                               std::strerror(errno) + "); fix: name an existing, readable file");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<messages::source_file>
read_source_files(const std::vector<std::filesystem::path>& paths) {
  std::vector<messages::source_file> sources;
  std::set<std::string> names;
  for (const auto& path : paths) {
    messages::source_file file;
    file.name = path.filename().string();
    file.content = read_input_file(path, "--source");
    if (!names.insert(file.name).second) {
      throw campaign_input_error("--source " + path.string() + ": another source is also named " +
                                 file.name +
                                 "; fix: rename one of them (sources are shipped by file name)");
    }
    sources.push_back(std::move(file));
  }
  return sources;
}

run_lease take_campaign_lease(const std::filesystem::path& file,
                              const std::string& command,
                              const std::string& subject,
                              const std::string& what,
                              const std::string& then) {
  try {
    return run_lease::acquire(file, command);
  } catch (const lease_held_error& error) {
    const auto& holder = error.holder();
    throw campaign_input_error(
        subject + " is in use by another " + what + ": it is " + error.what() +
        "; fix: wait until that run ends, or stop it" +
        (holder ? " (kill -INT " + std::to_string(holder->pid) + " on " + holder->host + ")"
                : std::string()) +
        then);
  } catch (const std::runtime_error& error) {
    throw campaign_input_error(subject + ": " + error.what());
  }
}

} // namespace rpl::engine
