#pragma once
/// What a compile worker refuses to run (issue 28): an engine chooses a job's argv, and a
/// compiler's flags can run other programs (`-wrapper`, `-B`, nvcc's `-ccbin`), load code into the
/// compiler (`-fplugin`, `-Xclang -load`), read arbitrary files back into the output (`@file`,
/// `-include /etc/shadow`, an input outside the job folder) or write outside it (`-o /etc/x`).
/// Each compiler's flags are data in its folder (host/, hipcc/, nvcc/); this is the one question
/// the worker asks of them. Pure: no file is opened, nothing runs.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rpl::workers {

/// Why one argument of a job may not run.
struct argv_refusal {
  std::string flag; ///< the argument as the job gave it ("-wrapper", "@/etc/passwd", "-I/opt/x")
  std::string why;  ///< what it would do ("runs another program")
  /// The path outside the job folder, when that is the reason; empty otherwise.
  std::string path;
  /// `path` is only read (an include folder, an input file): --allow-path would admit it. False
  /// for what a compiler writes, which stays inside the job folder whatever the worker allows.
  bool read_only = false;

  /// "refused flag -wrapper: runs another program", then the fix.
  std::string message() const;
};

/// Where a job's paths may point.
struct argv_limits {
  std::filesystem::path job_dir; ///< absolute: the job's private folder, its working directory
  /// Files and folders that read-only paths (-I, -isystem, -L, -include, inputs) may also name:
  /// the worker's --allow-path (a library's headers, the CUDA samples' common/ folder).
  std::vector<std::filesystem::path> read_roots;
};

/// The first argument of `argv` (argv[0] excluded: the worker checks the compiler's identity
/// itself, compiler_choice.hpp) that the rules of argv[0]'s compiler refuse, or
/// nullopt when every one may run. A compiler no family claims gets the strictest rules (every
/// family's refusals, and only shell-safe characters).
std::optional<argv_refusal> check_argv(const std::vector<std::string>& argv,
                                       const argv_limits& limits);

/// The absolute files and folders outside any job folder that `argv` only reads (-I, -isystem,
/// -include, inputs...): what a worker's --allow-path must name for it to run. The engine's local
/// workers allow those of the user's own build template; a remote worker's owner decides.
std::vector<std::string> named_read_paths(const std::vector<std::string>& argv);

} // namespace rpl::workers
