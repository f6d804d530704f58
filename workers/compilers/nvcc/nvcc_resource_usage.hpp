#pragma once
/// nvcc argv helpers and its resource report (`--resource-usage`, i.e. ptxas -v): registers, shared, local and stack
/// memory, spills and barriers per kernel. The compile worker asks nvcc for it and returns it with
/// the artifact.

#include <string>
#include <string_view>
#include <vector>

#include "messages/wire.hpp"

namespace rpl::workers {

/// Parses ptxas "info" lines; entries appear in the order ptxas compiled them. Lines it does not
/// recognise are ignored, so a newer ptxas that adds fields still parses.
std::vector<messages::kernel_resource_usage> parse_ptxas_resource_usage(std::string_view output);

/// True when argv runs nvcc (by its file name).
bool is_nvcc(const std::vector<std::string>& argv);

/// True when argv runs nvcc without naming a target architecture (-arch, -gencode, -code...): nvcc
/// would then build for an old default, so the engine adds the local GPU's.
bool nvcc_names_no_architecture(const std::vector<std::string>& argv);

/// True when argv runs nvcc without asking for the resource report already.
bool nvcc_needs_resource_flag(const std::vector<std::string>& argv);

}  // namespace rpl::workers
