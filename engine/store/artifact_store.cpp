#include "engine/store/artifact_store.hpp"

#include <fstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "stages/search/candidate_key.hpp"

namespace rpl::engine {

artifact_store::artifact_store(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    throw std::runtime_error("cannot create the artifact folder " + dir_.string() + ": " +
                             ec.message());
  }
}

artifact_store::stored artifact_store::put(std::string_view bytes, const std::string& tag) const {
  stored result;
  result.hash = stages::content_hash(bytes);
  result.path = dir_ / result.hash;
  std::error_code ec;
  if (std::filesystem::exists(result.path, ec)) {
    return result;
  }
  auto temporary = result.path;
  temporary += ".tmp" + std::to_string(getpid()) + "-" + tag;
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      result.error = "cannot write the artifact to " + temporary.string();
      return result;
    }
  }
  ::chmod(temporary.c_str(), 0755);
  std::filesystem::rename(temporary, result.path, ec);
  if (ec) {
    result.error = "cannot store the artifact: " + ec.message();
  }
  return result;
}

} // namespace rpl::engine
