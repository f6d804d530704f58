#pragma once
/// Build artifacts, content-addressed, in a folder next to the results database
/// (`<db>.artifacts/<content hash>`): the lane runs them by path ({BIN}).

#include <filesystem>
#include <string>
#include <string_view>

namespace rpl::engine {

class artifact_store {
public:
  /// Creates the folder if needed; throws std::runtime_error naming it when it cannot.
  explicit artifact_store(std::filesystem::path dir);

  struct stored {
    std::string hash;
    std::filesystem::path path;
    std::string error; ///< why the artifact could not be written; empty when it was
  };
  /// Writes `bytes` under their hash unless an identical artifact is there already. Write-then-
  /// rename, so a reader (or a crash) never sees half an artifact. `tag` keeps concurrent temporary
  /// names apart. Never throws.
  stored put(std::string_view bytes, const std::string& tag) const;

  const std::filesystem::path& dir() const { return dir_; }

private:
  std::filesystem::path dir_;
};

} // namespace rpl::engine
