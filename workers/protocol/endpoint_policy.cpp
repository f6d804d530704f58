#include "workers/protocol/endpoint_policy.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace rpl::workers {

std::string endpoint_transport(const std::string& endpoint) {
  const auto colon = endpoint.find("://");
  return colon == std::string::npos ? std::string() : endpoint.substr(0, colon);
}

std::string keyless_endpoint_refusal(const std::string& endpoint,
                                     const std::string& keys_flag,
                                     bool create_folder) {
  const std::string fix = "; fix: " + keys_flag +
                          " (rocm-perf keys generate DIR), or --insecure where every user of this "
                          "host and network is trusted";
  const std::string transport = endpoint_transport(endpoint);
  if (transport != "ipc") {
    return endpoint + ": a " + (transport.empty() ? "malformed" : transport) +
           " endpoint without CURVE keys is open to anyone who reaches it, other local users "
           "included: jobs and results would travel unauthenticated; only an ipc:// socket in a "
           "private folder needs no keys" +
           fix;
  }
  const std::string path = endpoint.substr(6);
  if (path.empty() || path.front() == '@') {
    return endpoint + ": an abstract ipc:// socket has no permissions: any local user can " +
           "connect to it" + fix + ", or an ipc:// path in a folder of mode 0700";
  }
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty() || path.front() != '/') {
    return endpoint + ": an ipc:// path without keys must be absolute, in a folder of mode 0700" +
           fix;
  }
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0) {
    if (errno == ENOENT && create_folder) {
      std::error_code ec;
      std::filesystem::create_directories(folder.parent_path(), ec);
      if (::mkdir(folder.c_str(), 0700) != 0 || ::stat(folder.c_str(), &info) != 0) {
        return endpoint + ": cannot create its folder " + folder.string() + " (" +
               std::strerror(errno) + "); fix: pass an ipc:// path in a folder you can create";
      }
    } else {
      return endpoint + ": its folder " + folder.string() + " cannot be checked (" +
             std::strerror(errno) + "); fix: create it with mode 0700 (mkdir -m 700)";
    }
  }
  if (!S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() || (info.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(info.st_mode & 0777));
    return endpoint + ": its folder " + folder.string() + " (mode " + mode + ", uid " +
           std::to_string(info.st_uid) +
           ") is open to other users, who could connect to the socket" + fix +
           ", or put the socket in a folder of yours with mode 0700 (mkdir -m 700)";
  }
  return {};
}

} // namespace rpl::workers
