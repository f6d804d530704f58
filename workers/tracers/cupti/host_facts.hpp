#pragma once
/// What the tracer reads about its host, its process and its devices when it writes the database:
/// /proc, /etc/machine-id, uname, the environment, and the CUDA driver API (which still answers
/// after the CUDA runtime was torn down, since libcuda stays loaded until the process ends).

#include <cstdint>
#include <set>

#include "stages/trace/cupti_mapping.hpp"

namespace rpl::workers::cupti_tracer {

/// The host and process facts of `pid`, with the names of `threads` (/proc/self/task/<tid>/comm).
rpl::stages::cupti::host_facts read_host_facts(std::int64_t pid,
                                               const std::set<std::int64_t>& threads);

/// What the driver says about device `ordinal` (initializing the driver if nobody did).
rpl::stages::cupti::driver_device read_driver_device(std::uint32_t ordinal);

} // namespace rpl::workers::cupti_tracer
