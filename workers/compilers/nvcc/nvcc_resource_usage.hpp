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

} // namespace rpl::workers
