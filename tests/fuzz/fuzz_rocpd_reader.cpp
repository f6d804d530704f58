// libFuzzer target: the rocpd reader (stages/trace/rocpd_reader.hpp) on arbitrary SQLite files, as
// `rocm-perf analyze` meets them (a damaged, truncated or foreign results.db).
//
// The reader opens files by path (sqlite3_deserialize would need a connection, which it does not
// take), so each input is written to one file on a RAM disk (/dev/shm when there is one, else
// $TMPDIR) and read from there exactly as the CLI reads it: validation, every dispatch, the info
// tables and the count. rocpd_error is the reader's only allowed failure; anything else escaping is
// reported by libFuzzer as a crash.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "stages/trace/rocpd_reader.hpp"

namespace {

namespace r = rpl::stages::rocpd;

std::filesystem::path scratch_file() {
  std::filesystem::path dir = "/dev/shm";
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    const char* tmp = std::getenv("TMPDIR");
    dir = tmp != nullptr ? tmp : "/tmp";
  }
  return dir / ("rpl-fuzz-rocpd-" + std::to_string(getpid()) + ".db");
}

void remove_files(const std::filesystem::path& path) {
  std::error_code error;
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) {
    std::filesystem::remove(path.string() + suffix, error);
  }
}

void write_input(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort(); // the harness itself is broken: no point going on
  }
}

void read_everything(const std::filesystem::path& path) {
  const r::reader reader = r::reader::open({path});
  reader.for_each_dispatch([&](const r::dispatch_row& row) {
    if (row.database >= reader.paths().size()) {
      __builtin_trap();
    }
  });
  (void)reader.agents();
  (void)reader.kernel_symbols();
  (void)reader.queues();
  (void)reader.streams();
  (void)reader.processes();
  (void)reader.dispatch_count();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path path = scratch_file();
  write_input(path, data, size);
  try {
    read_everything(path);
  } catch (const r::rocpd_error&) {
  }
  remove_files(path);
  return 0;
}
