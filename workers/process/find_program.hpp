#pragma once
/// Where a program named without a slash would be found: the first executable `NAME` in the
/// directories of PATH (empty entries skipped). Used to find tools (rocprofv3, ncu) and to identify
/// compilers (workers/compilers/toolchain_identity.hpp).

#include <filesystem>
#include <optional>
#include <string>

namespace rpl::workers {

/// nullopt when PATH is unset or holds no executable of that name.
std::optional<std::filesystem::path> find_on_path(const std::string& name);

} // namespace rpl::workers
