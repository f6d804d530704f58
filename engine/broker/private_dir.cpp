#include "engine/broker/private_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rpl::engine {

private_dir::private_dir() {
  std::string root = "/tmp";
  if (const char* tmpdir = std::getenv("TMPDIR");
      tmpdir != nullptr && *tmpdir == '/' && std::strlen(tmpdir) <= 64) {
    root = tmpdir;
  }
  std::string pattern = root + "/rocm-perf-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary folder under " + root +
                             " for the broker socket: " + std::strerror(errno) + "; fix: make " +
                             root + " writable, or set TMPDIR to a writable folder");
  }
  path_ = pattern;
}

private_dir::~private_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

} // namespace rpl::engine
