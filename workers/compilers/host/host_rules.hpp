#pragma once
/// The host compilers' rules (g++, gcc, clang++, clang, c++, cc, and versioned names such as
/// g++-12): no device target, no resource report, argv run exactly as asked. compiler_rules_for()
/// also answers with these for a compiler it does not know, so an unknown compiler is never
/// changed behind the user's back.

#include "workers/compilers/compiler_rules.hpp"

namespace rpl::workers {

class host_rules final : public compiler_rules {
public:
  std::string_view name() const override { return "host"; }
  /// argv[0]'s file name is one of g++ gcc clang++ clang c++ cc, optionally followed by "-" and a
  /// version number ("g++-12", "clang++-17").
  bool matches(const std::vector<std::string>& argv) const override;
  /// gcc's and clang's flags (host_flags.cpp, with clang's HIP flags from hipcc/) for a compiler
  /// these rules match; the strictest reading (compiler_rules') for one they only stand in for.
  std::optional<argv_refusal> check_argv(const std::vector<std::string>& argv,
                                         const argv_limits& limits) const override;
};

} // namespace rpl::workers
