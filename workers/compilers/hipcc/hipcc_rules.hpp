#pragma once
/// hipcc's rules (ROCm): `--offload-arch=gfxNNN` names the local GPU when the build names no
/// target; without one hipcc builds for what HCC_AMDGPU_TARGET or its own probe says, which need
/// not be the GPU the lane measures on. hipcc is run unchanged, and its output is not parsed: AMD's
/// resource numbers come from the code object itself (stages/hardware/code_object_metadata).

#include "workers/compilers/compiler_rules.hpp"

namespace rpl::workers {

class hipcc_rules final : public compiler_rules {
public:
  std::string_view name() const override { return "hipcc"; }
  /// argv[0]'s file name is exactly "hipcc".
  bool matches(const std::vector<std::string>& argv) const override;
  /// clang's flags (host/host_flags.cpp, hipcc_flags.cpp), and only shell-safe characters:
  /// hipcc (a Perl script) pastes its arguments into /bin/sh command lines, some unquoted.
  std::optional<argv_refusal> check_argv(const std::vector<std::string>& argv,
                                         const argv_limits& limits) const override;
  /// Any of --offload-arch[=]..., --amdgpu-target[=]... (hipcc's older spelling),
  /// --cuda-gpu-arch[=]... (clang's), or -march=gfx... / -mcpu=gfx... (an AMD GPU named the way
  /// the AMDGPU backend spells it; -march=native names the host CPU and does not count).
  bool names_target(const std::vector<std::string>& argv) const override;
  /// {"--offload-arch=gfxNNN"} for a "gfx..." name (a target id such as "gfx90a:xnack+" included),
  /// else nothing.
  std::vector<std::string> target_argv(std::string_view device_arch) const override;
};

} // namespace rpl::workers
