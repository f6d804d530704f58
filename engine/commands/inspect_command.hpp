#pragma once
/// `rocm-perf inspect`: each kernel of a code object, executable or shared library with its
/// resources and theoretical occupancy; no GPU needed.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rpl::engine {

struct inspect_options {
  std::vector<std::filesystem::path> files;
  std::string arch;                    ///< override the embedded target
  std::optional<std::uint32_t> block;  ///< also compute occupancy at this block size
  bool json = false;
};

/// 0 done, 2 bad input (unreadable or corrupt file, unknown --arch), 3 no file had device code.
int inspect_main(const inspect_options& options);

}  // namespace rpl::engine
