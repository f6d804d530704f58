#pragma once
/// Which program a compile job's argv[0] runs on a worker (issue 28): never a file picked by its
/// name alone. A bare name runs what this worker's own PATH finds for an allow-listed name (or an
/// allow-listed absolute path of that file name); a path runs only when it is the very file
/// (realpath, device and inode) of one of those. Either way the worker runs its own path for it,
/// never the job's spelling.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rpl::workers {

/// The outcome for one argv[0].
struct compiler_choice {
  /// What the worker runs (PATH's result or the allow-listed absolute path); empty when refused.
  std::filesystem::path program;
  std::string refusal; ///< why not, with the fix, when `program` is empty
  /// Refused only because this host has no such compiler (the name is allowed): another worker
  /// may have it, so the job is the worker's failure (internal_error), not the candidate's.
  bool missing = false;
};

/// Programs that run whatever command they are given (shells, interpreters, env, sudo, ccache by
/// its own name...): never a compiler, whatever the allow-list says; a compiler name that links to
/// one of them is refused too, but for ccache's masquerade links (`/usr/lib/ccache/g++`), which
/// run the compiler of their name.
bool runs_any_command(std::string_view file_name);

/// The program `argv0` runs among `allowed` (names as --allow-compiler gives them: "g++", or an
/// absolute path "/opt/rocm/bin/hipcc"). Looks up PATH and stats files; runs nothing.
compiler_choice choose_compiler(const std::string& argv0, const std::vector<std::string>& allowed);

/// True when `argv0`'s file name is the file name of an entry of `allowed` (the engine's check of
/// a build template before a worker sees it; the worker's own is choose_compiler). Shells and
/// launchers never are.
bool compiler_name_allowed(const std::string& argv0, const std::vector<std::string>& allowed);

} // namespace rpl::workers
