#pragma once
/// A private folder (mode 0700, from mkdtemp) for a broker's ipc:// socket, removed with
/// everything in it at the end of the run. Under $TMPDIR when that leaves room for the socket's
/// name (a Unix socket path is at most 107 bytes), else /tmp.

#include <filesystem>
#include <stdexcept>

namespace rpl::engine {

class private_dir {
public:
  /// Throws std::runtime_error naming the folder and a fix when it cannot be created.
  private_dir();
  ~private_dir();
  private_dir(const private_dir&) = delete;
  private_dir& operator=(const private_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace rpl::engine
