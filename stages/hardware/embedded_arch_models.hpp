#pragma once
/// The JSON texts of configs/arch/*.json, compiled into the library by stages/CMakeLists.txt.

#include <span>
#include <string_view>

namespace rpl::stages {

struct embedded_file {
  std::string_view name; ///< file stem, e.g. "gfx90a"
  std::string_view text;
};

/// Every architecture model, sorted by name.
std::span<const embedded_file> embedded_arch_models();

} // namespace rpl::stages
