#include "workers/process/find_program.hpp"

#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace rpl::workers {

std::optional<std::filesystem::path> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr)
    return std::nullopt;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty())
      continue;
    const auto candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> find_installed(const char* env,
                                                    std::initializer_list<const char*> candidates) {
  if (const char* value = std::getenv(env); value != nullptr && *value != '\0') {
    return std::filesystem::path(value);
  }
  std::error_code error;
  const auto folder = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
  for (const char* candidate : candidates) {
    const auto path = (folder / candidate).lexically_normal();
    if (std::filesystem::exists(path, error)) {
      return path;
    }
  }
  return std::nullopt;
}

} // namespace rpl::workers
