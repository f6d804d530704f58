#pragma once
/// What a compiler is on this host, so that the engine sends a job only to workers that compile it
/// alike (distcc and icecream's toolchain identity): the allow-listed name, the binary it resolves
/// to through PATH and symlinks, what its `--version` prints, and a content hash of that binary.
/// Two hosts whose ids are equal run the same compiler, whatever its install path. The whole
/// banner, not its first line: nvcc's first line is the same in every release, and a wrapper
/// such as hipcc names the clang it runs (whose binary the hash does not cover) on later lines.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/wire.hpp"

namespace rpl::workers {

/// A `--version` output as one line: its lines trimmed and joined with "; ", leaving out empty
/// ones and clang's "InstalledDir:" (the install folder, which differs between hosts that run the
/// same clang).
std::string version_banner(std::string_view output);

/// The id of a compiler from its parts: "NAME | VERSION | HASH".
std::string
toolchain_id_of(const std::string& name, const std::string& version, const std::string& hash);

/// Identifies `name` (a file name looked up in PATH, or a path). nullopt when it is not found or
/// not executable; a compiler whose `--version` fails or times out keeps an empty version (the hash
/// still tells binaries apart).
std::optional<messages::toolchain>
identify_toolchain(const std::string& name,
                   std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// identify_toolchain for each name that this host has; the others are left out.
std::vector<messages::toolchain> identify_toolchains(const std::vector<std::string>& names);

} // namespace rpl::workers
