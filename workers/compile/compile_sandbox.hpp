#pragma once
/// The compile worker's second wall (issue 28), behind its argv check: each compiler runs in a
/// bubblewrap (`bwrap`) sandbox. The job folder is its only writable folder and its working
/// directory; the rest of the system is read-only (`--ro-bind / /`); /tmp and /var/tmp are private
/// and empty; home folders, the shadow files, the worker's key folder and the other job folders
/// are hidden; there is no network; it runs in its own PID namespace and session, and dies with
/// the worker. bwrap needs root or unprivileged user namespaces; probe_sandbox says whether this
/// host can start one.

#include <filesystem>
#include <string>
#include <vector>

namespace rpl::workers {

/// What a sandbox shows, beyond a read-only system. The lists have `{}` so that a designated
/// initializer may leave them out without -Wmissing-field-initializers.
struct sandbox_layout {
  std::filesystem::path job_dir;   ///< bound writable; the compiler's working directory
  std::filesystem::path work_root; ///< where the job folders are: hidden, the job's bound back
  /// Further folders or files to hide (the worker's --curve-keys folder).
  std::vector<std::filesystem::path> hidden{};
  /// Shown read-only even where a folder above is hidden: the compiler's installation (a
  /// toolchain under /home or /tmp), the worker's --allow-path.
  std::vector<std::filesystem::path> shown{};
};

/// The folder a program's installation lives in, as far as its path tells: the folder above
/// `bin/` (`/home/u/gcc-13/bin/g++` -> `/home/u/gcc-13`), else the program's own folder.
std::filesystem::path installation_of(const std::filesystem::path& program);

/// bwrap's argv that runs `command` (an absolute program path first) in the sandbox `layout`
/// describes. Only paths that exist are hidden or shown; a work root that holds the program stays
/// visible.
std::vector<std::string> sandbox_argv(const std::filesystem::path& bwrap,
                                      const sandbox_layout& layout,
                                      const std::vector<std::string>& command);

/// Whether this host can sandbox compilers.
struct sandbox_probe {
  std::filesystem::path bwrap; ///< found on PATH; empty when there is none
  std::string why; ///< empty when it works; else what failed and the fix (--no-sandbox aside)
  bool works() const { return why.empty(); }
};

/// Finds bwrap (the RPL_BWRAP environment variable's path when set, else PATH's) and runs `true` in
/// a sandbox once, laid out as a job's would be under `work_root`
/// (a temporary folder there is the job folder; removed again). Takes a few milliseconds.
sandbox_probe probe_sandbox(const std::filesystem::path& work_root,
                            const std::vector<std::filesystem::path>& hidden = {});

} // namespace rpl::workers
