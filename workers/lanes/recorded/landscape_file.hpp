#pragma once
/// Reads a recorded landscape from disk: a Kernel Tuner cache file, plain JSON or gzip-compressed
/// (by its magic bytes, not its name), parsed by stages/search/landscape.hpp.

#include <filesystem>

#include "stages/search/landscape.hpp"

namespace rpl::workers {

/// Throws stages::landscape_error naming the file: missing, unreadable, a broken gzip stream, or
/// not a cache file.
stages::landscape load_landscape(const std::filesystem::path& path);

} // namespace rpl::workers
