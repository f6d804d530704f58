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

} // namespace rpl::workers
