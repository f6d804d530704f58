#pragma once
/// A capture directory on disk (stages/capture/capture_manifest.hpp's layout): written by the
/// capture libraries, read by the replay programs. Files are written whole (a temporary name,
/// renamed), so an interrupted capture never leaves a file that looks complete.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "stages/capture/capture_manifest.hpp"

namespace rpl::workers::capture {

namespace fs = std::filesystem;

/// dispatch.json, memory_regions.json and the status file's names.
inline constexpr const char* dispatch_file = "dispatch.json";
inline constexpr const char* regions_file = "memory_regions.json";
/// Written last by a capture library: {"status": "captured" | "refused" | "not_found", "reason"}.
inline constexpr const char* status_file = "capture_status.json";

/// Writes `bytes` to dir/name (creating folders), whole; throws std::runtime_error naming the file.
void write_bytes(const fs::path& dir, const std::string& name, const void* bytes, std::size_t size);
void write_text(const fs::path& dir, const std::string& name, const std::string& text);

/// Reads dir/name, which must hold exactly `size` bytes (any size when `size` is UINT64_MAX);
/// throws stages::capture::capture_error naming the file, the problem and a fix.
std::vector<std::uint8_t>
read_bytes(const fs::path& dir, const std::string& name, std::uint64_t size = UINT64_MAX);

/// The manifests of a capture directory, checked against the files beside them: each region's
/// file has the region's size, kernarg.bin holds every parameter, the code object exists.
struct capture_directory {
  fs::path dir;
  stages::capture::dispatch_manifest dispatch;
  std::vector<stages::capture::memory_region> regions;
  std::vector<std::uint8_t> kernarg;
  std::vector<std::uint8_t> code_object;
};

/// Loads `dir`; throws capture_error (a missing folder, a missing or malformed file, sizes that
/// disagree) with the path, the problem and a fix.
capture_directory load_capture(const fs::path& dir);

} // namespace rpl::workers::capture
