#pragma once
/// What the tracer reads about its host, its process and its devices: at start-up the host, the
/// command line and the environment (read then, on the thread that initializes CUDA, since the
/// checkpoint thread must not read `environ` while the program may change it); at each write the
/// thread names; once per device the CUDA driver API's attributes (the driver still answers after
/// the CUDA runtime was torn down, since libcuda stays loaded until the process ends).

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "stages/trace/cupti_mapping.hpp"

namespace rpl::workers::cupti_tracer {

/// The host and process facts of `pid`, thread names aside.
rpl::stages::cupti::host_facts read_host_facts(std::int64_t pid);

/// The names of `threads` (/proc/self/task/<tid>/comm); a thread that ended has none.
std::map<std::int64_t, std::string> read_thread_names(const std::set<std::int64_t>& threads);

/// What the driver says about device `ordinal` (initializing the driver if nobody did).
rpl::stages::cupti::driver_device read_driver_device(std::uint32_t ordinal);

} // namespace rpl::workers::cupti_tracer
