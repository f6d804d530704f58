#pragma once
/// Where `optimize -- APP` finds its kernels' definitions, and the tree `--app-build` copies:
/// the --source files, or the CUDA/HIP sources found under --source-dir. Discovery reads each file
/// once (up to a cap) and keeps those that mention `__global__`; a kernel's definition is then
/// looked for only in the files whose text holds its base name, each parsed with libclang once,
/// so that a large tree costs a text search, not a parse per file.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/optimize/app_mode.hpp"

namespace rpl::engine {

/// A kernel's definition in a source.
struct source_definition {
  std::filesystem::path file;
  std::string function; ///< the unqualified name (kernel_target::kernel)
  std::string symbol;   ///< the device symbol libclang gives it (mangled; extern "C": plain)
  unsigned line = 0;
};

class kernel_source_index {
public:
  /// With search.files: each read and parsed now (optimize_input_error names a missing or
  /// unparsable one); else search.dir discovered now and parsed on demand. Throws
  /// optimize_input_error without libclang or for a --source-dir that is no folder.
  explicit kernel_source_index(const app_source_search& search);
  ~kernel_source_index();
  kernel_source_index(const kernel_source_index&) = delete;
  kernel_source_index& operator=(const kernel_source_index&) = delete;

  /// The definitions of the kernel the trace names `name` (demangled or not), with `mangled` its
  /// code-object symbol when the trace gave one: by symbol first, else by qualified name.
  std::vector<source_definition> find(const std::string& mangled, const std::string& name);
  /// "a.cu, b.cu", or "the 12 CUDA/HIP files under DIR".
  std::string searched() const;
  /// How the sources were searched: the files read and kept, a cap that was hit, files that
  /// could not be parsed.
  const std::vector<std::string>& notes() const;

private:
  struct state;
  std::unique_ptr<state> state_;
};

/// The function name of a demangled kernel name: "void ns::gemm<128>(float*, int)" -> "ns::gemm";
/// a name without a parameter list is returned as it is.
std::string kernel_base_name(std::string name);

/// Whether discovery and the --app-build copy leave `folder` out: hidden (.git, .cache), a build
/// folder (build, build-*, build_*, cmake-build-*, CMakeFiles, _build) or one of `exclude`.
bool left_out_folder(const std::filesystem::path& folder,
                     const std::vector<std::filesystem::path>& exclude);

/// Copies the tree under `root` into `destination` (which exists), leaving out what
/// left_out_folder says; returns the files written there. Throws app_run_error when a copy
/// fails.
std::vector<std::filesystem::path>
copy_source_tree(const std::filesystem::path& root,
                 const std::filesystem::path& destination,
                 const std::vector<std::filesystem::path>& exclude);

} // namespace rpl::engine
