#include "workers/tracers/detail/recorded_child.hpp"

#include <algorithm>
#include <cstdio>

namespace rpl::workers::tracers_detail {

child_outcome run_recorded_child(child_options child,
                                 std::chrono::milliseconds timeout,
                                 bool echo,
                                 const std::string& title) {
  child.max_output_bytes = 1 << 20;
  auto outcome = run_child(child, timeout);
  if (echo) {
    std::fprintf(stderr, "--- %s ---\n%s", title.c_str(), outcome.output.c_str());
  }
  return outcome;
}

std::string describe_failure(const child_outcome& outcome) {
  // describe_exit() words a launch failure "could not be started: ..."; profile has always quoted
  // the launch error alone, and its messages stay as they were.
  return outcome.launched ? describe_exit(outcome) : outcome.launch_error;
}

std::string output_tail(const child_outcome& outcome) {
  return outcome.output.size() > 2000 ? outcome.output.substr(outcome.output.size() - 2000)
                                      : outcome.output;
}

std::string join_argv(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& word : argv) {
    text += (text.empty() ? "" : " ") + word;
  }
  return text;
}

std::vector<std::filesystem::path> find_databases(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           folder, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".db") {
      found.push_back(it->path());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

} // namespace rpl::workers::tracers_detail
