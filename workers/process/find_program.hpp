#pragma once
/// Where a program named without a slash would be found: the first executable `NAME` in the
/// directories of PATH (empty entries skipped). Used to find tools (rocprofv3, ncu) and to identify
/// compilers (workers/compilers/toolchain_identity.hpp).

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>

namespace rpl::workers {

/// nullopt when PATH is unset or holds no executable of that name.
std::optional<std::filesystem::path> find_on_path(const std::string& name);

/// A file installed with this program (a library, a helper program): the path in the environment
/// variable `env` when set (as given, unchecked), else the first of `candidates` (relative to the
/// folder of this executable, e.g. "../lib/librpl_cupti_tracer.so") that exists.
std::optional<std::filesystem::path> find_installed(const char* env,
                                                    std::initializer_list<const char*> candidates);

} // namespace rpl::workers
