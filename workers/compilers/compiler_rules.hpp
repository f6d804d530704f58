#pragma once
/// The compiler seam: everything that differs per compiler, in one place. The compile worker asks
/// it how to run a compiler and what its output says about the kernels; the engine asks it how to
/// name the local GPU as the target when a build template names none. Implementations, one folder
/// each: nvcc/, hipcc/, host/ (g++, clang++, cc...: nothing to change).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/wire.hpp"
#include "workers/compilers/argv_check.hpp"

namespace rpl::workers {

class compiler_rules {
public:
  virtual ~compiler_rules() = default;

  /// The family's name for logs and errors: "nvcc", "hipcc", "host".
  virtual std::string_view name() const = 0;

  /// True when `argv` runs this compiler, judged by argv[0]'s file name (never by running it).
  virtual bool matches(const std::vector<std::string>& argv) const = 0;

  /// `argv` as the compile worker runs it: the request's argv with what this compiler needs added
  /// (nvcc: `--resource-usage`, so that the reply carries the kernels' registers and spills). The
  /// changes never alter the artifact. The default changes nothing.
  virtual std::vector<std::string> worker_argv(std::vector<std::string> argv) const;

  /// True when `argv` already names a device target (nvcc: -arch, -gencode...; hipcc:
  /// --offload-arch...). Compilers without device targets always name one (nothing to add).
  virtual bool names_target(const std::vector<std::string>& argv) const;

  /// The words that make this compiler build for `device_arch` ("sm_90" → {"-arch=sm_90"},
  /// "gfx942" → {"--offload-arch=gfx942"}); empty when `device_arch` is not one of this compiler's
  /// targets (an AMD name for nvcc, an empty name) or the compiler has no device targets.
  virtual std::vector<std::string> target_argv(std::string_view device_arch) const;

  /// The per-kernel resource report in the compiler's output (nvcc: ptxas lines); empty when the
  /// compiler reports none or the output holds none.
  virtual std::vector<messages::kernel_resource_usage>
  parse_resource_usage(std::string_view output) const;

  /// The first argument after argv[0] that this compiler's flags refuse on a worker
  /// (argv_check.hpp), or nullopt. The default is the strictest reading: every family's
  /// refusals, and only characters that are never shell syntax.
  virtual std::optional<argv_refusal> check_argv(const std::vector<std::string>& argv,
                                                 const argv_limits& limits) const;

  /// What the engine appends to `argv` when it names no target: target_argv(device_arch) when
  /// names_target(argv) is false, else nothing. Without it nvcc builds for its oldest default
  /// architecture and hipcc for whatever its environment says.
  std::vector<std::string> default_target_argv(const std::vector<std::string>& argv,
                                               std::string_view device_arch) const;
};

/// The rules for the compiler `argv` runs: nvcc's, hipcc's, else the host rules (which change
/// nothing, so an unknown compiler runs exactly as asked). Never throws; the objects live for the
/// whole program.
const compiler_rules& compiler_rules_for(const std::vector<std::string>& argv);

/// argv[0]'s file name ("/usr/local/cuda/bin/nvcc" → "nvcc"); empty for an empty argv.
std::string compiler_file_name(const std::vector<std::string>& argv);

} // namespace rpl::workers
