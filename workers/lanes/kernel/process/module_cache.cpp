#include "workers/lanes/kernel/process/module_cache.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace rpl::workers::kernel_process {

namespace {

bool read_code_object(const std::string& path, std::string& image, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read the code object " + path + ": " + std::strerror(errno) +
            "; fix: pass the artifact's path as argv[0]";
    return false;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  image = bytes.str();
  if (image.empty()) {
    error = "the code object " + path + " is empty; fix: check the build's {OUT}";
    return false;
  }
  return true;
}

} // namespace

module_cache::~module_cache() {
  for (entry& e : entries_)
    api_.unload_module(e.module);
}

module_cache::outcome module_cache::get(const std::string& path) {
  outcome out;
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    out.file_error = "cannot read the code object " + path + ": " + std::strerror(errno) +
                     "; fix: pass the artifact's path as argv[0]";
    return out;
  }
  const std::int64_t mtime_ns =
      static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  const auto size = static_cast<std::uintmax_t>(info.st_size);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->path != path)
      continue;
    if (it->size == size && it->mtime_ns == mtime_ns) {
      entries_.splice(entries_.begin(), entries_, it);
      out.module = it->module;
      out.cached = true;
      return out;
    }
    api_.unload_module(it->module); // the file changed under the same name
    entries_.erase(it);
    break;
  }
  std::string image;
  if (!read_code_object(path, image, out.file_error))
    return out;
  module_handle module = nullptr;
  if ((out.load_error = api_.load_module(image, module)))
    return out;
  while (!entries_.empty() && entries_.size() >= capacity_) {
    api_.unload_module(entries_.back().module);
    entries_.pop_back();
  }
  entries_.push_front(entry{path, size, mtime_ns, module});
  out.module = module;
  return out;
}

} // namespace rpl::workers::kernel_process
