#pragma once
/// Loaded code objects, kept across requests: the final round sends each finalist ten times, and
/// a reference kernel is the first candidate's code object again. Keyed by path and checked
/// against the file's size and modification time (artifacts are content-addressed, so a path
/// seldom changes); least recently used first out, unloaded when it goes.

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>

#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process {

class module_cache {
public:
  explicit module_cache(device_api& api, std::size_t capacity = 8)
      : api_(api), capacity_(capacity) {}
  ~module_cache();
  module_cache(const module_cache&) = delete;
  module_cache& operator=(const module_cache&) = delete;

  struct outcome {
    module_handle module = nullptr; ///< null on failure
    bool cached = false;            ///< found loaded; false: read and loaded now
    std::string file_error;         ///< the file could not be read (with a fix); else empty
    device_status load_error;       ///< the API refused the image
  };

  /// The module of the code object at `path`, loaded now unless already loaded from the same file.
  outcome get(const std::string& path);

private:
  struct entry {
    std::string path;
    std::uintmax_t size = 0;
    std::int64_t mtime_ns = 0;
    module_handle module = nullptr;
  };
  device_api& api_;
  std::size_t capacity_;
  std::list<entry> entries_; ///< most recently used first
};

} // namespace rpl::workers::kernel_process
