#include "workers/compilers/argv_check.hpp"

#include "workers/compilers/compiler_rules.hpp"

namespace rpl::workers {

std::string argv_refusal::message() const {
  std::string text = "refused flag " + flag + ": " + why + "; fix: ";
  if (path.empty())
    return text + "remove it from the build template";
  if (!read_only)
    return text + "write inside the job folder (a relative path without '..', or {OUT})";
  return text + "send the file with the job (--source), or start the worker with --allow-path " +
         "naming its folder";
}

std::optional<argv_refusal> check_argv(const std::vector<std::string>& argv,
                                       const argv_limits& limits) {
  if (argv.empty())
    return std::nullopt;
  return compiler_rules_for(argv).check_argv(argv, limits);
}

std::vector<std::string> named_read_paths(const std::vector<std::string>& argv) {
  // A folder no job folder can be: every absolute path is outside it.
  argv_limits limits{"/nonexistent/rpl-job", {}};
  std::vector<std::string> paths;
  // Each refusal of a read path names one; allowed, the next refusal comes (at most one per word).
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const auto refusal = check_argv(argv, limits);
    if (!refusal || !refusal->read_only || refusal->path.empty() || refusal->path.front() != '/')
      break;
    paths.push_back(refusal->path);
    limits.read_roots.emplace_back(refusal->path);
  }
  return paths;
}

} // namespace rpl::workers
