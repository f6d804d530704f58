#pragma once
/// nvcc's rules: it is asked for its resource report (`--resource-usage`, i.e. ptxas -v), its
/// ptxas lines become kernel_resource_usage, and `-arch=sm_XY` names the local GPU when the build
/// names no architecture (nvcc's own default is its oldest supported one).

#include "workers/compilers/compiler_rules.hpp"

namespace rpl::workers {

class nvcc_rules final : public compiler_rules {
public:
  std::string_view name() const override { return "nvcc"; }
  /// argv[0]'s file name is exactly "nvcc".
  bool matches(const std::vector<std::string>& argv) const override;
  /// nvcc's flags (nvcc_flags.cpp), then the host table for the rest, and only shell-safe
  /// characters: nvcc runs each step through /bin/sh (`-DX=$(cmd)` runs cmd).
  std::optional<argv_refusal> check_argv(const std::vector<std::string>& argv,
                                         const argv_limits& limits) const override;
  /// Appends `--resource-usage` unless it (or `-res-usage`) is there already.
  std::vector<std::string> worker_argv(std::vector<std::string> argv) const override;
  /// Any word starting with -arch, --gpu-architecture, -gencode, --generate-code or -code.
  bool names_target(const std::vector<std::string>& argv) const override;
  /// {"-arch=sm_XY"} for an "sm_..." name, else nothing.
  std::vector<std::string> target_argv(std::string_view device_arch) const override;
  /// parse_ptxas_resource_usage (nvcc_resource_usage.hpp).
  std::vector<messages::kernel_resource_usage>
  parse_resource_usage(std::string_view output) const override;
};

} // namespace rpl::workers
