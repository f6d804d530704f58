#pragma once
/// The JSON texts of configs/analysis/*.json (thresholds of the analyses), compiled into the
/// library by stages/CMakeLists.txt, so a relocated binary carries them.

#include <span>
#include <string_view>

#include "stages/hardware/embedded_arch_models.hpp"

namespace rpl::stages {

/// Every analysis config, sorted by name (file stem, e.g. "bottleneck").
std::span<const embedded_file> embedded_analysis_configs();

} // namespace rpl::stages
