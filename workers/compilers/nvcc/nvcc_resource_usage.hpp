#pragma once
/// nvcc's resource report (`--resource-usage`, i.e. ptxas -v): registers, shared, local and stack
/// memory, spills and barriers per kernel. nvcc_rules asks nvcc for it and parses it with this;
/// the compile worker returns it with the artifact.

#include <string>
#include <string_view>
#include <vector>

#include "messages/wire.hpp"

namespace rpl::workers {

/// Parses ptxas "info" lines; entries appear in the order ptxas compiled them. Lines it does not
/// recognise are ignored, so a newer ptxas that adds fields still parses.
std::vector<messages::kernel_resource_usage> parse_ptxas_resource_usage(std::string_view output);

// The three argv checks below predate compiler_rules and forward to nvcc_rules; they stay while
// engine/autotune.cpp calls nvcc_names_no_architecture. New code: compiler_rules_for(argv).

/// True when argv runs nvcc (by its file name). Same as nvcc_rules().matches(argv).
bool is_nvcc(const std::vector<std::string>& argv);

/// True when argv runs nvcc without naming a target architecture (-arch, -gencode, -code...): nvcc
/// would then build for an old default, so the engine adds the local GPU's. Use
/// compiler_rules_for(argv).default_target_argv(argv, arch) instead.
bool nvcc_names_no_architecture(const std::vector<std::string>& argv);

/// True when argv runs nvcc without asking for the resource report already. Use
/// compiler_rules_for(argv).worker_argv(argv) instead.
bool nvcc_needs_resource_flag(const std::vector<std::string>& argv);

} // namespace rpl::workers
