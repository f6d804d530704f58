#include "workers/capture/capture_directory.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace rpl::workers::capture {

namespace sc = rpl::stages::capture;

void write_bytes(const fs::path& dir,
                 const std::string& name,
                 const void* bytes,
                 std::size_t size) {
  const fs::path path = dir / name;
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  const fs::path temporary = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (out) {
      out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
    }
    if (!out) {
      const std::string why = std::strerror(errno);
      fs::remove(temporary, error);
      throw std::runtime_error("cannot write " + path.string() + " (" + why +
                               "); fix: free space there, or capture into another --out folder");
    }
  }
  fs::rename(temporary, path, error);
  if (error) {
    fs::remove(temporary, error);
    throw std::runtime_error("cannot write " + path.string() + " (" + error.message() + ")");
  }
}

void write_text(const fs::path& dir, const std::string& name, const std::string& text) {
  write_bytes(dir, name, text.data(), text.size());
}

std::vector<std::uint8_t>
read_bytes(const fs::path& dir, const std::string& name, std::uint64_t size) {
  const fs::path path = dir / name;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    throw sc::capture_error(path.string() + ": cannot read the file (" + std::strerror(errno) +
                            "); fix: pass the folder that rocm-perf isolate --out wrote, whole");
  }
  const auto length = static_cast<std::uint64_t>(in.tellg());
  if (size != UINT64_MAX && length != size) {
    throw sc::capture_error(path.string() + ": " + std::to_string(length) +
                            " bytes, but the manifest says " + std::to_string(size) +
                            "; fix: the capture is damaged: capture it again");
  }
  std::vector<std::uint8_t> bytes(length);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
  if (!in) {
    throw sc::capture_error(path.string() + ": read failed; fix: capture it again");
  }
  return bytes;
}

namespace {

nlohmann::json read_json(const fs::path& dir, const char* name) {
  const auto bytes = read_bytes(dir, name);
  try {
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& error) {
    throw sc::capture_error((dir / name).string() + ": not JSON (" + error.what() +
                            "); fix: capture the dispatch again");
  }
}

} // namespace

capture_directory load_capture(const fs::path& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw sc::capture_error(dir.string() + ": no such capture folder; fix: pass the folder that "
                                           "rocm-perf isolate --out wrote");
  }
  capture_directory c;
  c.dir = dir;
  if (fs::exists(dir / status_file, error)) {
    const auto status = read_json(dir, status_file);
    if (status.value("status", std::string()) != "captured") {
      throw sc::capture_error(dir.string() + ": holds no capture (" +
                              status.value("status", std::string("?")) + ": " +
                              status.value("reason", std::string()) +
                              "); fix: capture a dispatch that rocm-perf isolate can hold");
    }
  }
  c.dispatch =
      sc::dispatch_from_json(read_json(dir, dispatch_file), (dir / dispatch_file).string());
  c.regions = sc::regions_from_json(read_json(dir, regions_file), (dir / regions_file).string());
  c.kernarg = read_bytes(dir, c.dispatch.kernarg_file);
  if (c.kernarg.size() < sc::kernarg_bytes(c.dispatch.params)) {
    throw sc::capture_error((dir / c.dispatch.kernarg_file).string() + ": " +
                            std::to_string(c.kernarg.size()) + " bytes, but the parameters need " +
                            std::to_string(sc::kernarg_bytes(c.dispatch.params)) +
                            "; fix: capture it again");
  }
  c.code_object = read_bytes(dir, c.dispatch.code_object_file);
  for (const auto& r : c.regions) {
    if (fs::file_size(dir / r.file, error) != r.size || error) {
      throw sc::capture_error((dir / r.file).string() + ": missing or not " +
                              std::to_string(r.size) + " bytes (region " + sc::hex_address(r.base) +
                              "); fix: capture it again");
    }
    if (!r.after_file.empty() && (fs::file_size(dir / r.after_file, error) != r.size || error)) {
      throw sc::capture_error((dir / r.after_file).string() + ": missing or not " +
                              std::to_string(r.size) + " bytes (region " + sc::hex_address(r.base) +
                              "); fix: capture it again");
    }
  }
  return c;
}

} // namespace rpl::workers::capture
