#pragma once
/// The static screen's inputs for one compiled candidate, gathered before any GPU time: the
/// launched kernel's resources (nvcc's --resource-usage in the compile reply, or the AMDGPU
/// code object's metadata note read from the artifact), the architecture model of the arch they
/// were built for, and the candidate's launch geometry (the kernel lane's launch). The decision
/// itself is stages/hardware/launch_screen.hpp.
///
/// What is screened where:
/// - kernel lane (--launch): everything launch_screen checks, for the kernel the launch file names
///   (matched by exact name, or a C++ kernel's mangled name `_Z<length><name>...`);
/// - timing and application lanes: nothing. They run whole programs whose launches we do not see,
///   and what a kernel alone can break (static shared memory or LDS over the per-block maximum,
///   registers over the per-thread maximum) the compilers already refuse (ptxas "uses too much
///   shared data", clang "local memory limit exceeded"): such a build fails and is invalid anyway.
/// A candidate that cannot be screened (no resources for the kernel, no model for its arch, an
/// artifact that is not a code object) is let through with the reason in `skipped`.

#include <array>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "messages/kernel_lane.hpp"
#include "messages/wire.hpp"

namespace rpl::engine {

struct screen_outcome {
  /// "static screen: ..." when the device would refuse the launch; empty otherwise.
  std::string refusal;
  /// What was screened (kernel, arch, resources, geometry, theoretical occupancy, refusal); null
  /// when nothing was.
  nlohmann::json record;
  /// Why nothing was screened; empty when the screen ran.
  std::string skipped;
  /// For the model strategy, when the screen ran: registers (per thread; AMD VGPRs), static +
  /// dynamic shared memory (LDS) bytes, spill bytes (nvcc's stores + loads; AMD scratch per
  /// work-item), theoretical occupancy (stages::static_feature_names).
  std::optional<std::array<double, 4>> features;
};

/// Screens one candidate: `reply` its compile reply (resources), `artifact` its stored artifact
/// (a code object is read from it when the reply has no resources), `launch` its kernel-lane
/// launch (nullopt: another lane, nothing screened). `device_arch` ("sm_90"; empty when unknown)
/// picks among several architectures the reply reports. Never throws.
screen_outcome screen_candidate(const messages::compile_reply& reply,
                                const std::filesystem::path& artifact,
                                const std::optional<messages::kernel_launch>& launch,
                                const std::string& device_arch);

/// True when `reported` (a compiler's or code object's kernel name) is the kernel the launch file
/// names as `symbol`: the same name, or a C++ mangled name of it (`_Z<length><symbol>...`).
bool kernel_name_matches(const std::string& reported, const std::string& symbol);

} // namespace rpl::engine
