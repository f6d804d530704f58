#include "workers/lanes/recorded/landscape_file.hpp"

#include <fstream>
#include <sstream>

#include <zlib.h>

namespace rpl::workers {

namespace {

/// The whole gzip stream `data` inflated (concatenated members included).
std::string gunzip(const std::string& data, const std::string& origin) {
  z_stream z{};
  // 15 + 32: a zlib or gzip header, detected.
  if (inflateInit2(&z, 15 + 32) != Z_OK)
    throw stages::landscape_error(origin + ": cannot start zlib");
  std::string out;
  char buffer[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END || z.avail_in > 0) {
    if (rc == Z_STREAM_END && inflateReset(&z) != Z_OK)
      break;
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw stages::landscape_error(
          origin + ": a broken gzip stream (" +
          (z.msg != nullptr ? std::string(z.msg) : "zlib error " + std::to_string(rc)) +
          "); fix: the file is cut short or damaged, copy it again");
    }
    out.append(buffer, sizeof(buffer) - z.avail_out);
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw stages::landscape_error(origin + ": the gzip stream ends early; fix: the file is cut "
                                             "short, copy it again");
    }
  }
  inflateEnd(&z);
  return out;
}

} // namespace

stages::landscape load_landscape(const std::filesystem::path& path) {
  const std::string origin = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw stages::landscape_error(origin + ": cannot be read; fix: check the path (a Kernel Tuner "
                                           "cache file, .json or .json.gz)");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string text = bytes.str();
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f &&
      static_cast<unsigned char>(text[1]) == 0x8b)
    text = gunzip(text, origin);
  return stages::parse_kernel_tuner_cache(text, origin);
}

} // namespace rpl::workers
